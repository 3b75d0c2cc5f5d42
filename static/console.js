// Tideline console behaviour that htmx does not cover. Loaded as a file (no
// inline scripts) so the Content-Security-Policy can forbid inline code.
// Everything here is an enhancement: every page works without it.
(function () {
  "use strict";

  // Forms that ask for confirmation carry data-confirm-text; the submit
  // button stays disabled until the typed value matches. The server checks
  // it too, so without this script the button simply stays enabled.
  function syncConfirm(input) {
    var form = input.form;
    var button = form && form.querySelector("[data-confirm-submit]");
    if (button) button.disabled = input.value !== input.getAttribute("data-confirm-text");
  }
  document.addEventListener("input", function (ev) {
    var input = ev.target;
    if (input.matches && input.matches("[data-confirm-text]")) syncConfirm(input);
  });

  // "Select all" exists only with JavaScript; it starts hidden.
  function enhance(root) {
    root.querySelectorAll("[data-confirm-text]").forEach(syncConfirm);
    root.querySelectorAll("[data-select-all]").forEach(function (box) {
      box.hidden = false;
    });
  }
  document.addEventListener("change", function (ev) {
    var el = ev.target;
    if (el.matches && el.matches("[data-select-all]")) {
      document.querySelectorAll("input.bulk").forEach(function (box) {
        box.checked = el.checked;
      });
    }
  });

  // Auto-refresh of the registry (the element with data-autorefresh polls
  // every 10 s). A refresh replaces the rows, so hold it while the operator
  // is working with them: a selected checkbox, an open row action, typing in
  // the results, or an open modal. Cancelling htmx:beforeRequest skips that
  // poll only; the next one tries again.
  function busy() {
    var results = document.getElementById("registry-results");
    var modal = document.getElementById("modal");
    if (document.hidden) return true;
    if (modal && modal.open) return true;
    if (document.querySelector("input.bulk:checked")) return true;
    if (!results) return false;
    if (results.querySelector("details[open]")) return true;
    var active = document.activeElement;
    return !!active && results.contains(active) && active.matches("input, select, textarea");
  }
  document.addEventListener("htmx:beforeRequest", function (ev) {
    var elt = ev.detail && ev.detail.elt;
    if (elt && elt.hasAttribute && elt.hasAttribute("data-autorefresh") && busy()) ev.preventDefault();
  });

  // The layout's <dialog id="modal">: open it when htmx swaps a panel into
  // #modal-body, and title it from the panel's data-modal-title.
  document.addEventListener("htmx:afterSwap", function (ev) {
    var target = ev.detail && ev.detail.target;
    if (!target || target.id !== "modal-body") return;
    var modal = document.getElementById("modal");
    var panel = target.querySelector("[data-modal-title]");
    var title = document.getElementById("modal-title");
    if (title) title.textContent = panel ? panel.getAttribute("data-modal-title") : "Details";
    if (modal && !modal.open && typeof modal.showModal === "function") modal.showModal();
  });

  // htmx takes the <title> of the page a modal's panel comes from ("History
  // of x · Tideline"); the page gets its own title back when the modal
  // closes (by ×, Esc or a backdrop click: the dialog's close event, which
  // does not bubble, so it is caught on the way down).
  var titleBeforeModal = null;
  document.addEventListener("htmx:beforeSwap", function (ev) {
    var target = ev.detail && ev.detail.target;
    var modal = document.getElementById("modal");
    if (target && target.id === "modal-body" && modal && !modal.open && titleBeforeModal === null) titleBeforeModal = document.title;
  });
  document.addEventListener("close", function (ev) {
    if (!ev.target || ev.target.id !== "modal" || titleBeforeModal === null) return;
    document.title = titleBeforeModal;
    titleBeforeModal = null;
  }, true);

  // A failed htmx request never swaps an error page into a row or a panel:
  // the message of an ErrorPage (whatever its status), or of any response
  // htmx does not swap, is shown in the layout's #toast instead.
  var toastTimer;
  function toast(message) {
    var el = document.getElementById("toast");
    if (!el) return;
    el.textContent = message;
    el.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(function () { el.hidden = true; }, 8000);
  }
  function errorPageMessage(html) {
    if (!html || html.indexOf("data-testid=\"error-title\"") < 0) return null;
    var doc = new DOMParser().parseFromString(html, "text/html");
    var title = doc.querySelector("[data-testid=error-title]");
    var body = doc.querySelector("[data-testid=error-message] p");
    return [title && title.textContent.trim(), body && body.textContent.trim()].filter(Boolean).join(": ");
  }
  document.addEventListener("htmx:beforeSwap", function (ev) {
    var xhr = ev.detail && ev.detail.xhr;
    if (!xhr || xhr.status < 400) return;
    var message = errorPageMessage(xhr.responseText);
    if (message !== null) {
      ev.detail.shouldSwap = false;
      toast(message);
    } else if (!ev.detail.shouldSwap) {
      toast("Request failed (" + xhr.status + ")");
    }
  });
  document.addEventListener("htmx:sendError", function () {
    toast("The server did not answer. Check the connection and try again.");
  });
  document.addEventListener("click", function (ev) {
    if (ev.target && ev.target.id === "toast") ev.target.hidden = true;
  });

  // Row menus and popovers (<details data-menu>: Pause…, the ⋯ menu, the
  // Trigger… and Delete… inside it). Without this script they open and
  // close like any disclosure; with it, one is open at a time (opening one
  // closes every other that does not contain it), Esc closes the innermost
  // and gives focus back to its summary, and a click outside closes them.
  function openMenus() {
    return Array.prototype.slice.call(document.querySelectorAll("details[data-menu][open]"));
  }
  document.addEventListener("toggle", function (ev) {
    var d = ev.target;
    if (!d.matches || !d.matches("details[data-menu]") || !d.open) return;
    openMenus().forEach(function (other) {
      if (other !== d && !other.contains(d)) other.open = false;
    });
    // The Pause… popover asks for a reason: start there.
    var first = d.querySelector(":scope > form input[type=text]");
    if (first) first.focus();
  }, true);
  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "Escape") return;
    var modal = document.getElementById("modal");
    if (modal && modal.open) return; // the dialog handles its own Esc
    var open = openMenus();
    if (open.length) {
      // The innermost open one is the last in document order.
      var d = open[open.length - 1];
      d.open = false;
      var summary = d.querySelector(":scope > summary");
      if (summary) summary.focus();
      ev.preventDefault();
      return;
    }
    var msg = document.querySelector("[data-row-message]:not([hidden])");
    if (msg) msg.hidden = true;
  });
  document.addEventListener("click", function (ev) {
    var t = ev.target;
    if (t.closest && t.closest("[data-dismiss]")) {
      var box = t.closest("[data-row-message]");
      if (box) box.hidden = true;
      return;
    }
    openMenus().forEach(function (d) {
      if (!d.contains(t)) d.open = false;
    });
    // A link in the ⋯ menu (History, Backfill…) opens a modal or a page:
    // the menu has done its job.
    var link = t.closest && t.closest(".menu-panel a");
    if (link) {
      var menu = link.closest("details.menu");
      if (menu) menu.open = false;
    }
  });

  // The result of a row action is swapped in with the row; say it to
  // screen readers through the page's live region too (an element that
  // arrives already filled is not always announced).
  document.addEventListener("htmx:afterSettle", function () {
    var live = document.getElementById("announce");
    if (!live) return;
    document.querySelectorAll("[data-row-message]:not([data-announced])").forEach(function (msg) {
      msg.setAttribute("data-announced", "");
      live.textContent = msg.textContent.replace(/\u00d7\s*$/, "").replace(/\s+/g, " ").trim();
    });
  });

  // Content htmx adds (rows, modal panels) gets the same enhancements.
  document.addEventListener("htmx:load", function (ev) {
    if (ev.target && ev.target.querySelectorAll) enhance(ev.target);
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { enhance(document); });
  } else {
    enhance(document);
  }
})();

// The header's time setting submits when changed (a button does it
// without JavaScript). "Browser local" is rendered in UTC by the server
// and converted here; relative times ("in 4 min") are kept current.
(function () {
  document.addEventListener("change", function (ev) {
    var el = ev.target;
    if (el && el.hasAttribute && el.hasAttribute("data-autosubmit") && el.form) el.form.submit();
  });
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function localText(d) {
    var zone = "";
    try {
      var parts = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" }).formatToParts(d);
      for (var i = 0; i < parts.length; i++) if (parts[i].type === "timeZoneName") zone = " " + parts[i].value;
    } catch (e) { /* no Intl: leave the zone out */ }
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + pad(d.getHours()) + ":" + pad(d.getMinutes()) + zone;
  }
  // relative mirrors the server's wording (handlers/console_format.go).
  function relative(ms) {
    var s = Math.floor(Math.abs(ms) / 1000), v;
    if (s < 1) return "now";
    if (s < 60) v = s + " s";
    else if (s < 3600) v = Math.floor(s / 60) + " min";
    else if (s < 48 * 3600) v = Math.floor(s / 3600) + " h";
    else v = Math.floor(s / 86400) + " days";
    return ms > 0 ? "in " + v : v + " ago";
  }
  function refresh(root) {
    var local = document.body && document.body.getAttribute("data-time") === "local";
    var times = (root || document).querySelectorAll("time[datetime]");
    for (var i = 0; i < times.length; i++) {
      var t = times[i], d = new Date(t.getAttribute("datetime"));
      if (isNaN(d)) continue;
      // Only the times rendered as "YYYY-MM-DD HH:MM ZONE"; compact ones
      // ("3 min ago") keep their text.
      if (local && /^\d{4}-\d\d-\d\d \d\d:\d\d/.test(t.textContent)) t.textContent = localText(d);
      var rel = t.nextElementSibling;
      if (rel && rel.classList && rel.classList.contains("rel")) rel.textContent = relative(d.getTime() - Date.now());
    }
  }
  document.addEventListener("DOMContentLoaded", function () { refresh(document); });
  document.addEventListener("htmx:afterSwap", function (ev) { refresh(ev.detail && ev.detail.target); });
  document.addEventListener("tideline:times", function () { refresh(document); });
  setInterval(function () { refresh(document); }, 30000);
})();

// --- console-a: live pages (views.LivePoller) ---
// A live region (the run page, the runs list, the schedule page) polls
// every 5 s. Skip a poll while the viewer is busy, so a refresh never
// closes what they opened or drops what they typed: any open ⋯ menu or
// action disclosure on the page, an open disclosure (a payload, the
// ledger table) or a focused field inside the region, the modal, or a
// hidden tab. Cancelling htmx:beforeRequest skips this poll only.
(function () {
  function busy(elt) {
    if (document.hidden) return true;
    var modal = document.getElementById("modal");
    if (modal && modal.open) return true;
    if (document.querySelector("details[data-menu][open], details.action[open]")) return true;
    var region = document.querySelector(elt.getAttribute("hx-target"));
    if (!region) return false;
    if (region.querySelector("details[open]")) return true;
    var active = document.activeElement;
    return !!active && region.contains(active) && active.matches("input, select, textarea");
  }
  document.addEventListener("htmx:beforeRequest", function (ev) {
    var elt = ev.detail && ev.detail.elt;
    if (elt && elt.hasAttribute && elt.hasAttribute("data-live") && busy(elt)) ev.preventDefault();
  });
  // An outerHTML swap replaces the target, so the times in the new region
  // are converted (browser local) and made relative once it has settled.
  document.addEventListener("htmx:afterSettle", function () {
    document.dispatchEvent(new CustomEvent("tideline:times"));
  });
})();

// Long operations (issue 21): a form posted without htmx (a whole page
// comes back) marks its submit button busy — a spinner, disabled against a
// second click — until the next page arrives. htmx's own posts do the same
// through hx-disabled-elt (views/busy.go). The button is disabled after the
// submit event, so that its name and value are still sent.
(function () {
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (ev.defaultPrevented || !form || (form.method || "").toLowerCase() !== "post") return;
    var button = ev.submitter || form.querySelector("button[type=submit], button:not([type])");
    if (!button) return;
    button.classList.add("is-busy");
    form.setAttribute("aria-busy", "true");
    setTimeout(function () { button.disabled = true; }, 0);
  });
  // Back to a page kept in the browser's cache: nothing is in flight.
  window.addEventListener("pageshow", function (ev) {
    if (!ev.persisted) return;
    document.querySelectorAll("button.is-busy").forEach(function (b) {
      b.classList.remove("is-busy");
      b.disabled = false;
      if (b.form) b.form.removeAttribute("aria-busy");
    });
  });
  document.addEventListener("htmx:beforeRequest", function (ev) {
    var elt = ev.detail && ev.detail.elt;
    if (elt && elt.tagName === "FORM") elt.setAttribute("aria-busy", "true");
  });
  document.addEventListener("htmx:afterRequest", function (ev) {
    var elt = ev.detail && ev.detail.elt;
    if (elt && elt.tagName === "FORM") elt.removeAttribute("aria-busy");
  });
  // A link of the form's error summary moves the focus to its input (the
  // browser alone only scrolls to it).
  document.addEventListener("click", function (ev) {
    var link = ev.target.closest && ev.target.closest(".error-summary a[href^='#'], .preview .field-error a[href^='#']");
    if (!link) return;
    var input = document.getElementById(link.getAttribute("href").slice(1));
    if (!input) return;
    ev.preventDefault();
    var field = input.closest(".field") || input;
    field.scrollIntoView({ block: "center" });
    input.focus({ preventScroll: true });
  });
  // A backfill's answer can be long: keep its Start button (or what it
  // did) on screen after the swap.
  document.addEventListener("htmx:afterSettle", function (ev) {
    var head = document.querySelector("#backfill-panel .backfill-head");
    if (head && ev.detail && ev.detail.elt && ev.detail.elt.id === "backfill-panel") head.scrollIntoView({ block: "nearest" });
  });
})();

// Polls answered 304 (web/conditional.go, issue 37 §7): a poller (an
// element whose hx-trigger is "every …") sends the ETag of its URL's last
// answer as If-None-Match, and a 304 leaves the page as it is. Any other
// htmx request may change what is on screen, so it forgets every tag: the
// next poll after it is answered in full.
(function () {
  var tags = new Map();
  function poller(elt) {
    return !!elt && elt.getAttribute && /^every\s/.test(elt.getAttribute("hx-trigger") || "");
  }
  document.addEventListener("htmx:configRequest", function (ev) {
    var d = ev.detail;
    if (!poller(d.elt) || d.verb !== "get") {
      tags.clear();
      return;
    }
    var tag = tags.get(d.path);
    if (tag) d.headers["If-None-Match"] = tag;
  });
  document.addEventListener("htmx:beforeSwap", function (ev) {
    var xhr = ev.detail && ev.detail.xhr;
    if (xhr && xhr.status === 304) ev.detail.shouldSwap = false;
  });
  document.addEventListener("htmx:afterRequest", function (ev) {
    var d = ev.detail;
    if (!d || !d.xhr || !poller(d.elt) || d.xhr.status !== 200) return;
    var tag = d.xhr.getResponseHeader("ETag");
    var path = d.requestConfig && d.requestConfig.path;
    if (tag && path) tags.set(path, tag);
  });
})();
