// Session page: when htmx swaps in the residual panel for a newly chosen step, move the
// "selected" highlight to that step's row and lane cells.  Without JavaScript the step links
// load the whole page, which marks the selection on the server.
document.addEventListener("htmx:afterSwap", function (event) {
  var panel = event.detail.target;
  if (!panel || panel.id !== "residual-panel") return;
  var body = panel.querySelector(".residual-body");
  var step = body ? body.getAttribute("data-step") : "";
  document.querySelectorAll(".is-selected[data-step]").forEach(function (element) {
    element.classList.remove("is-selected");
  });
  document.querySelectorAll(".timeline a[aria-current]").forEach(function (link) {
    link.removeAttribute("aria-current");
  });
  if (!/^[0-9]+$/.test(step)) return;
  document.querySelectorAll('[data-step="' + step + '"]').forEach(function (element) {
    if (element === body) return;
    element.classList.add("is-selected");
    if (element.tagName === "TR") {
      var link = element.querySelector("a");
      if (link) link.setAttribute("aria-current", "step");
    }
  });
});
