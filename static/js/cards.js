/* Card editor niceties; the editor works without them (plain form, Preview button).
 * - Ctrl/Cmd-S saves the card.
 * - Leaving with unsaved changes asks first (the browser's own dialog).
 * Listeners are delegated on document, so they survive HTMX swaps of #main. */
(function () {
  "use strict";
  if (window.cardEditorReady) return;  // the script tag comes back with every swap
  window.cardEditorReady = true;
  var submitting = false;

  function editor() { return document.querySelector("form[data-card-editor]"); }
  function dirty(form) {
    var area = form && form.querySelector("textarea[name=content]");
    return !!area && area.value !== area.defaultValue;
  }
  function mark(form) {
    var flag = form && form.querySelector("[data-unsaved]");
    if (flag) flag.hidden = !dirty(form);
  }

  document.addEventListener("input", function (event) {
    if (event.target.matches("form[data-card-editor] textarea[name=content]")) {
      mark(event.target.form);
    }
  });
  document.addEventListener("keydown", function (event) {
    var form = editor();
    if (!form || !(event.ctrlKey || event.metaKey) || event.key.toLowerCase() !== "s") return;
    event.preventDefault();
    var save = form.querySelector("[data-save]");
    if (form.requestSubmit) form.requestSubmit(save); else save.click();
  });
  document.addEventListener("submit", function () { submitting = true; }, true);
  document.addEventListener("htmx:afterRequest", function () { submitting = false; });
  window.addEventListener("beforeunload", function (event) {
    if (!submitting && dirty(editor())) {
      event.preventDefault();
      event.returnValue = "";
    }
  });
})();
