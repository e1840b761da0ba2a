// The upload form's enhancements; without them it is a plain multipart form that works as is.
// - a file dragged onto the drop zone fills the file input and the form is submitted;
// - the format is guessed from the file's name until the person picks one;
// - the CSV column mapping is shown only for CSV;
// - empty and oversized files are refused before a byte is sent (the server checks again).
(function () {
  "use strict";

  const GUESSES = { jsonl: "jsonl", ndjson: "jsonl", csv: "csv", tsv: "csv", eval: "inspect" };

  function humanSize(bytes) {
    const units = ["bytes", "KB", "MB", "GB"];
    let size = bytes;
    let unit = 0;
    while (size >= 1024 && unit < units.length - 1) {
      size /= 1024;
      unit += 1;
    }
    return (unit ? size.toFixed(1) : String(size)) + " " + units[unit];
  }

  function setUp(form) {
    const input = form.querySelector("input[type=file]");
    const format = form.querySelector("[data-format]");
    const mapping = form.querySelector("[data-csv-mapping]");
    const session = form.querySelector("[data-csv-session]");
    const zone = form.querySelector("[data-drop-zone]");
    const problem = form.querySelector("[data-file-error]");
    const button = form.querySelector("[data-upload-button]");
    const uploading = form.querySelector("[data-uploading]");
    const maxBytes = Number(form.dataset.maxBytes) || Infinity;
    let formatPicked = false;

    function showMapping() {
      const csv = format.value === "csv";
      mapping.hidden = !csv;
      if (session) session.required = csv;
    }

    function report(message) {
      problem.textContent = message;
      if (message) {
        input.setAttribute("aria-invalid", "true");
      } else {
        input.removeAttribute("aria-invalid");
      }
    }

    // A message for a file that cannot be uploaded, or "" when it can.
    function fileProblem(file) {
      if (!file) return "Choose a log file to upload.";
      if (file.size === 0) return file.name + " is empty: there is nothing to import.";
      if (file.size > maxBytes) {
        return file.name + " is " + humanSize(file.size) + "; uploads are limited to " +
          humanSize(maxBytes) + ". Split the log into smaller files and upload each.";
      }
      return "";
    }

    function guessFormat(file) {
      if (formatPicked || !file) return;
      const extension = file.name.split(".").pop().toLowerCase();
      const guess = GUESSES[extension];
      if (guess && format.querySelector('option[value="' + guess + '"]')) {
        format.value = guess;
        showMapping();
      }
    }

    function fileChosen() {
      const file = input.files[0];
      guessFormat(file);
      report(file ? fileProblem(file) : "");
    }

    format.addEventListener("change", function () {
      formatPicked = true;
      showMapping();
    });
    input.addEventListener("change", fileChosen);

    form.addEventListener("submit", function (event) {
      const message = fileProblem(input.files[0]);
      if (message) {
        event.preventDefault();
        report(message);
        input.focus();
        return;
      }
      // Large files take a while to send: say so, and keep a second click from sending twice.
      button.disabled = true;
      uploading.hidden = false;
    });
    // Coming back to the page from the browser's history shows the form ready again.
    window.addEventListener("pageshow", function () {
      button.disabled = false;
      uploading.hidden = true;
    });

    // A file dropped next to the zone must not make the browser leave the page to open it.
    document.addEventListener("dragover", function (event) { event.preventDefault(); });
    document.addEventListener("drop", function (event) { event.preventDefault(); });
    zone.addEventListener("dragover", function (event) {
      event.preventDefault();
      event.dataTransfer.dropEffect = "copy";
      zone.classList.add("is-dragging");
    });
    zone.addEventListener("dragleave", function (event) {
      if (!zone.contains(event.relatedTarget)) zone.classList.remove("is-dragging");
    });
    zone.addEventListener("drop", function (event) {
      event.preventDefault();
      zone.classList.remove("is-dragging");
      const files = event.dataTransfer.files;
      if (files.length !== 1) {
        report("Drop one file at a time.");
        return;
      }
      input.files = files;
      fileChosen();
      if (problem.textContent) return;
      if (format.value === "csv" && session && !session.value.trim()) {
        // The mapping is needed before a CSV log can be read: ask for it, then Upload.
        session.focus();
        return;
      }
      form.requestSubmit();
    });

    showMapping();
  }

  document.querySelectorAll("[data-upload-form]").forEach(setUp);
})();
