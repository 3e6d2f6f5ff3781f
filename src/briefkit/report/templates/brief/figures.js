// Hover values and legend toggles for the brief's inline SVG figures (no library, nothing fetched).
// Each point carries data-tip (its values) and data-s (its series); svg[data-series] names the series.
(function () {
  "use strict";
  var tip = document.createElement("div");
  tip.className = "bk-tip";
  tip.setAttribute("role", "status");
  document.body.appendChild(tip);
  function move(event) {
    tip.style.left = (event.pageX + 12) + "px";
    tip.style.top = (event.pageY + 12) + "px";
  }
  function show(event) {
    tip.textContent = event.currentTarget.getAttribute("data-tip");
    tip.style.display = "block";
    move(event);
  }
  function hide() { tip.style.display = "none"; }
  document.querySelectorAll("svg.bk-svg").forEach(function (svg) {
    svg.querySelectorAll("[data-tip]").forEach(function (point) {
      point.addEventListener("mouseenter", show);
      point.addEventListener("mousemove", move);
      point.addEventListener("mouseleave", hide);
    });
    var names = JSON.parse(svg.getAttribute("data-series") || "[]");
    if (names.length > 1) {
      var controls = document.createElement("div");
      controls.className = "bk-controls";
      controls.setAttribute("aria-label", "Show or hide a series");
      names.forEach(function (name, index) {
        var button = document.createElement("button");
        button.type = "button";
        button.textContent = name;
        button.setAttribute("aria-pressed", "true");
        button.addEventListener("click", function () {
          var on = button.getAttribute("aria-pressed") !== "true";
          button.setAttribute("aria-pressed", on ? "true" : "false");
          svg.querySelectorAll('[data-s="' + index + '"]').forEach(function (element) {
            element.style.display = on ? "" : "none";
          });
        });
        controls.appendChild(button);
      });
      svg.parentNode.insertBefore(controls, svg);
    }
    svg.setAttribute("data-interactive", "on");
  });
})();
