/* Review desk keyboard shortcuts and "select all" boxes. No framework; every action is a
   real form or link, so the page works without this file. */
(function () {
  "use strict";
  if (window.curatorReviewKeys) return; // HTMX may load the page's script more than once
  window.curatorReviewKeys = true;

  var ITEMS = "ol.queue > li.item";

  function items() {
    return Array.prototype.slice.call(document.querySelectorAll(ITEMS));
  }
  function open(li) {
    return li && !li.classList.contains("done");
  }
  function current() {
    return document.querySelector(ITEMS + ".current");
  }
  function select(li, keepFocus) {
    if (!li) return;
    items().forEach(function (el) { el.classList.remove("current"); });
    li.classList.add("current");
    if (keepFocus) return; // moving focus off a clicked button would drop it from its form
    li.focus({ preventScroll: true });
    li.scrollIntoView({ block: "nearest" });
  }
  function move(step) {
    var list = items().filter(open);
    if (!list.length) return;
    var at = list.indexOf(current());
    var next = at < 0 ? 0 : Math.min(list.length - 1, Math.max(0, at + step));
    select(list[next]);
  }
  function press(key) {
    var li = current() || items().filter(open)[0];
    if (!li) return;
    select(li, true);
    var target = li.querySelector('[data-key="' + key + '"]');
    if (!target) return;
    if (key === "l") {
      var details = target.closest("details");
      details.open = true;
      var first = details.querySelector("button");
      if (first) first.focus();
      return;
    }
    target.click();
  }
  var lastDone = null; // the id of the item the person acted on last: u takes it back
  function undoLast() {
    var li = lastDone && document.getElementById(lastDone);
    var button = li && li.querySelector('[data-key="u"]');
    if (button) button.click();
  }
  function toggleSelected() {
    var li = current();
    var box = li && li.querySelector('input[type="checkbox"][name="ids"]');
    if (box) box.checked = !box.checked;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || !document.querySelector(ITEMS)) return;
    var field = event.target.closest("input, textarea, select, [contenteditable]");
    if (field) {
      if (event.key === "Escape") field.blur();
      return;
    }
    var actions = {
      j: function () { move(1); },
      k: function () { move(-1); },
      x: toggleSelected,
      c: function () { press("c"); },
      e: function () { press("e"); },
      i: function () { press("i"); },
      l: function () { press("l"); },
      u: undoLast,
    };
    if (!actions[event.key]) return;
    event.preventDefault();
    actions[event.key]();
  });

  // After an item is swapped in place, keep the place in the queue: an edit form gets the
  // focus, a finished item hands the selection to the next open one. (afterSettle: until
  // then htmx keeps the old element's classes on the new one.)
  document.addEventListener("htmx:afterSettle", function (event) {
    var swapped = event.target;
    if (!swapped || !swapped.matches || !swapped.matches(ITEMS)) return;
    if (swapped.classList.contains("editing")) {
      var area = swapped.querySelector("textarea");
      if (area) area.focus();
      return;
    }
    if (!open(swapped)) lastDone = swapped.id;
    var list = items();
    var next = list.slice(list.indexOf(swapped) + 1).filter(open)[0];
    select(open(swapped) ? swapped : next || swapped);
  });

  // "Select all" boxes are hidden until this script can make them work.
  function wireSelectAll(root) {
    (root || document).querySelectorAll("[data-select-all]").forEach(function (box) {
      if (box.dataset.wired) return;
      box.dataset.wired = "1";
      var label = box.closest("label");
      (label || box).hidden = false;
      box.addEventListener("change", function () {
        var form = box.getAttribute("data-select-all") || "review-bulk";
        document.querySelectorAll('input[name="ids"][form="' + form + '"]').forEach(function (el) {
          el.checked = box.checked;
        });
      });
    });
  }
  document.addEventListener("DOMContentLoaded", function () { wireSelectAll(); });
  document.addEventListener("htmx:afterSettle", function (event) { wireSelectAll(event.detail.elt); });

  document.addEventListener("click", function (event) {
    var li = event.target.closest(ITEMS);
    if (li && open(li)) select(li, true);
  });
})();
