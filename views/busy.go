package views

// busyButtons is the hx-disabled-elt of the forms htmx posts: while the
// request is in flight the form's submit button is disabled (no second
// click starts the work twice) and, through the htmx-request class htmx
// puts on the form, shows a spinner (static/tideline.css). Forms posted
// without htmx get the same from static/console.js; without JavaScript the
// form just submits.
const busyButtons = "find button[type=submit]"
