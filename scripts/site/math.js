// Renders the math pymdownx.arithmatex left as \(…\) and \[…\] (class "arithmatex") with KaTeX.
// A formula KaTeX cannot parse (an unknown macro, say) stays as its source text and auto-render
// reports it with console.error: the browser test (scripts/site_test.py) fails on either.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".arithmatex").forEach(function (el) {
    renderMathInElement(el, {
      delimiters: [{left: "\\[", right: "\\]", display: true}, {left: "\\(", right: "\\)", display: false}],
      throwOnError: true,
    });
  });
});
