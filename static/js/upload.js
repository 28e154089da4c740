/* Attachments page: drop a file on the upload form. The form is a plain multipart form that
   works without this file; this only fills its file input from a drop and names the file. */
(function () {
  "use strict";
  if (window.curatorUpload) return; // HTMX may load the page's script more than once
  window.curatorUpload = true;

  function setup(zone) {
    if (zone.dataset.ready) return;
    zone.dataset.ready = "1";
    var input = zone.querySelector("input[type=file]");
    var hint = zone.querySelector("[data-drop-hint]");
    var name = zone.querySelector("[data-drop-name]");
    if (!input) return;
    if (hint) hint.hidden = false;

    function show() {
      if (name) name.textContent = input.files.length ? input.files[0].name : "";
    }
    input.addEventListener("change", show);
    ["dragenter", "dragover"].forEach(function (type) {
      zone.addEventListener(type, function (event) {
        event.preventDefault();
        zone.classList.add("dragging");
      });
    });
    ["dragleave", "drop"].forEach(function (type) {
      zone.addEventListener(type, function () { zone.classList.remove("dragging"); });
    });
    zone.addEventListener("drop", function (event) {
      event.preventDefault();
      var files = event.dataTransfer && event.dataTransfer.files;
      if (!files || !files.length) return;
      input.files = files; // a FileList from a drop can be assigned to a file input
      show();
    });
  }

  function init() {
    document.querySelectorAll("[data-dropzone]").forEach(setup);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
  document.addEventListener("htmx:afterSwap", init);
})();
