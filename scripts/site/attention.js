// The course site's attention explorer: every element with data-attention="FILE.json" (the JSON
// `lm attention --json` writes: text, tokens, layers[layer][head][query][key]) becomes a layer
// and a head picker and that head's weights as a grid — row i is what position i (holding the
// token before it) attended to. Hovering a cell names the two tokens and the weight. Plain DOM,
// no library, nothing fetched but the JSON beside the page. When drawn, the element gets
// data-rendered="ok" (scripts/site/selftest.js checks it); on failure, an error message and
// data-rendered="error".
(function () {
  function shown(token) {
    return token.replace(/\n/g, "↵").replace(/ /g, "␣");
  }

  function explorer(el, data) {
    const L = data.tokens.length, labels = el.dataset;
    el.innerHTML = "";
    const controls = document.createElement("div");
    controls.className = "attention-controls";
    const layer = document.createElement("select"), head = document.createElement("select");
    data.layers.forEach(function (_, l) { layer.add(new Option((labels.layerWord || "layer") + " " + (l + 1), l)); });
    data.layers[0].forEach(function (_, h) { head.add(new Option((labels.headWord || "head") + " " + (h + 1), h)); });
    const info = document.createElement("span");
    info.className = "attention-info";
    controls.append(layer, " ", head, " ", info);
    const grid = document.createElement("div");
    grid.className = "attention-grid";
    grid.style.gridTemplateColumns = "max-content repeat(" + L + ", 1fr)";
    el.append(controls, grid);

    function draw() {
      const rows = data.layers[+layer.value][+head.value];
      grid.innerHTML = "";
      grid.append(document.createElement("span"));
      data.tokens.forEach(function (t) {
        const k = document.createElement("span");
        k.className = "attention-key";
        k.textContent = shown(t);
        grid.append(k);
      });
      rows.forEach(function (row, i) {
        const q = document.createElement("span");
        q.className = "attention-query";
        q.textContent = shown(data.tokens[i]);
        grid.append(q);
        row.forEach(function (w, j) {
          const cell = document.createElement("span");
          cell.className = "attention-cell";
          cell.style.background = "rgba(63, 81, 181, " + Math.min(1, w).toFixed(3) + ")";
          cell.title = shown(data.tokens[i]) + " → " + shown(data.tokens[j]) + ": " + (100 * w).toFixed(1) + "%";
          cell.addEventListener("mouseenter", function () { info.textContent = cell.title; });
          grid.append(cell);
        });
      });
    }
    layer.addEventListener("change", draw);
    head.addEventListener("change", draw);
    draw();
    el.dataset.rendered = "ok";
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-attention]").forEach(function (el) {
      fetch(el.dataset.attention)
        .then(function (r) {
          if (!r.ok) throw new Error(el.dataset.attention + ": HTTP " + r.status);
          return r.json();
        })
        .then(function (data) { explorer(el, data); })
        .catch(function (e) {
          el.textContent = "attention explorer: " + e.message;
          el.dataset.rendered = "error";
          console.error("attention explorer: " + e.message);
        });
    });
  });
})();
