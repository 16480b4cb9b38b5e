(function () {
  "use strict";
  var box = document.getElementById("only-alarms");
  var table = document.getElementById("timeline-table");
  if (box && table) {
    box.addEventListener("change", function () {
      table.classList.toggle("only-alarms", box.checked);
    });
  }
  // Following a link to a step opens the folded step list first.
  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    if (!el) return;
    for (var p = el.parentElement; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") p.open = true;
    }
    if (box && box.checked && el.tagName === "TR") {
      box.checked = false;
      table.classList.remove("only-alarms");
    }
    el.scrollIntoView({block: "center"});
  }
  window.addEventListener("hashchange", reveal);
  reveal();
  var groups = document.querySelectorAll("article.group").length;
  document.documentElement.setAttribute("data-report-ready", String(groups));
})();
