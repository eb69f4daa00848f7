// A panel shown as a modal dialog over the page (the context panel: `role="dialog"`,
// `aria-modal="true"` in index.html). While it is open the page behind it is inert (no click,
// no focus, out of a screen reader's reach) under a backdrop; Tab and Shift+Tab go round the
// panel's own controls, Escape or a click on the backdrop closes it. The live regions (the
// announcer, the state announcer, the error toast) stay outside the inert part: what they say
// still reaches a screen reader. Where the focus goes when it closes is the panel's business
// (`hidePanel` in dom.js), once `hideModal` has made the page usable again.
const $ = (id) => document.getElementById(id);

const BEHIND = ['skip-link', 'sidebar', 'header', 'find-bar', 'warnings-layer', 'conversation', 'approvals', 'composer'];
const FOCUSABLE = 'a[href], button, input, select, textarea, summary, [tabindex]';

let shown = null;  // { panel, close }

/** The controls of `panel` Tab reaches, in order. */
function controls(panel) {
  return [...panel.querySelectorAll(FOCUSABLE)]
    .filter((node) => !node.disabled && node.tabIndex >= 0 && node.getClientRects().length > 0);
}

function onKey(event) {
  if (!shown) return;
  if (event.key === 'Escape') {
    event.preventDefault();
    shown.close();
    return;
  }
  if (event.key !== 'Tab') return;
  const inside = controls(shown.panel);
  event.preventDefault();  // the panel's own order, wrapping at both ends
  if (!inside.length) return;
  const at = inside.indexOf(document.activeElement);
  const next = event.shiftKey
    ? (at <= 0 ? inside.length - 1 : at - 1)
    : (at < 0 || at === inside.length - 1 ? 0 : at + 1);
  inside[next].focus();
}

document.addEventListener('keydown', onKey);
$('modal-backdrop').addEventListener('click', () => shown?.close());

/** Show `panel` as the modal dialog; `close()` is what Escape and the backdrop call. */
export function showModal(panel, close) {
  for (const id of BEHIND) $(id).inert = true;
  $('modal-backdrop').hidden = false;
  panel.hidden = false;
  shown = { panel, close };
}

/** The page behind usable again (the panel itself is hidden by its owner); false when no
 * dialog was open. */
export function hideModal() {
  if (!shown) return false;
  shown = null;
  $('modal-backdrop').hidden = true;
  for (const id of BEHIND) $(id).inert = false;
  return true;
}

/** A modal dialog is open: the page's own shortcuts (Ctrl+F) wait. */
export function modalOpen() {
  return shown !== null;
}
