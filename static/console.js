// Tideline console behaviour that htmx does not cover. Loaded as a file (no
// inline scripts) so the Content-Security-Policy can forbid inline code.
(function () {
  "use strict";
  // Forms that ask for confirmation carry data-confirm-text; a typed value
  // must match before the submit button is enabled.
  document.addEventListener("input", function (ev) {
    var input = ev.target;
    if (!input.matches || !input.matches("[data-confirm-text]")) return;
    var form = input.form;
    var button = form && form.querySelector("[data-confirm-submit]");
    if (button) button.disabled = input.value !== input.getAttribute("data-confirm-text");
  });
})();
