// The browser test's eyes inside a page (scripts/site_test.py): with "?selftest" in the URL, once
// the page has loaded and its math and attention explorers are drawn, writes what is wrong into
// <body data-selftest="…"> as JSON — images that did not load, math KaTeX did not render, an
// explorer that drew nothing, and every error the page's scripts raised. Without "?selftest" it does nothing.
(function () {
  if (!/[?&]selftest\b/.test(location.search)) return;
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push("error: " + (e.message || (e.target && (e.target.src || e.target.href)) || "unknown"));
  }, true);
  var consoleError = console.error;
  console.error = function () {
    errors.push("console.error: " + Array.prototype.join.call(arguments, " "));
    consoleError.apply(console, arguments);
  };
  window.addEventListener("load", function () {
    const started = Date.now();
    const report = function () {
      // Interactive parts that load their data (attention.js) first finish, or 5 s pass.
      const pending = document.querySelectorAll("[data-attention]:not([data-rendered])");
      if (pending.length && Date.now() - started < 5000) return setTimeout(report, 50);
      var problems = errors.slice();
      document.querySelectorAll("img").forEach(function (img) {
        if (!img.complete || img.naturalWidth === 0) problems.push("image not loaded: " + img.getAttribute("src"));
      });
      var math = document.querySelectorAll(".arithmatex");
      math.forEach(function (el) {
        if (!el.querySelector(".katex") || el.querySelector(".katex-error"))
          problems.push("math not rendered: " + el.textContent.slice(0, 60));
      });
      document.querySelectorAll("[data-attention]").forEach(function (el) {
        if (el.dataset.rendered !== "ok") problems.push("attention explorer not drawn: " + el.dataset.attention);
        else if (!el.querySelector(".attention-cell")) problems.push("attention explorer drew no weights");
      });
      document.body.setAttribute("data-selftest", JSON.stringify({problems: problems, math: math.length,
                                                                  images: document.images.length,
                                                                  interactive: document.querySelectorAll("[data-attention]").length}));
    };
    setTimeout(report, 200);
  });
})();
