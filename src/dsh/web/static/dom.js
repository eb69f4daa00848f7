// How text from outside (a reply, a tool's arguments and output, a path, a title, a warning)
// reaches the page: as text, never as markup (`el` sets a node's textContent; Markdown goes
// through markdown.js, sanitised), and as `shown` makes it: each Unicode bidi control as its
// escape (`\u202e`), as every face of dsh shows one (dsh.tools.terminal_text.BIDI_CONTROLS).
// Drawn, a bidi control reorders the text around it: a path `a\u202egnp.exe` would read
// `aexe.png`, and the command an approval asks about would not read as what runs.
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// A Unicode tag character (U+E0000-U+E007F) draws nothing, yet a model reads each as the ASCII
// letter it shadows: a file or a web page can hide an instruction in them. Each shows as its
// escape (`\U000e0072`, as dsh.tui.wrap shows it), but in a subdivision flag (🏴 + tags + CANCEL
// TAG), which is a picture.
const TAGS = /(\u{1F3F4}[\u{E0020}-\u{E007E}]{1,6}\u{E007F})|[\u{E0000}-\u{E007F}]/gu;

export function shown(text) {
  return String(text)
    .replace(BIDI_CONTROLS, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .replace(TAGS, (ch, flag) => flag || `\\U${ch.codePointAt(0).toString(16).padStart(8, '0')}`);
}

// A message's text holds no character a terminal acts on as it is drawn: the terminal UI drops a
// reply's C0 controls (an escape sequence's ESC, BEL, a lone carriage return) and so does the
// page, tabs and line breaks but (a CR LF is a line break), rather than draw each as a box.
const C0_CONTROLS = /[\x00-\x08\x0b-\x1f\x7f]/g;

/** `text` without its C0 controls (and DEL), `\t` and `\n` kept: a message as drawn. */
export function plain(text) {
  return String(text).replace(C0_CONTROLS, '');
}

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = shown(text);
  return node;
}

const SAID_KEPT = 3;

/** Say `text` (as `shown` makes it) through the live region `region`, a polite `role="status"`
 * that is not atomic: each saying is a node of its own, so a screen reader reads the same text
 * said again, and two things said at once both; only the last few stay. */
export function say(region, text) {
  region.append(el('div', '', text));
  while (region.childElementCount > SAID_KEPT) region.firstElementChild.remove();
}

/** Where the focus goes back to when a panel opened now closes: the element focused now (the
 * composer, for Ctrl+F there), else `toggle`, the panel's button. */
export function focusOrigin(toggle) {
  const now = document.activeElement;
  return now && now !== document.body ? now : toggle;
}

/** Hide `panel`; when the focus was in it (or `always`: a modal dialog's, which nothing outside
 * it could take), give it back to `origin` (`toggle` if that went or cannot take it): a hidden
 * panel drops the focus to the page's start, and the next Tab with it. */
export function hidePanel(panel, origin, toggle, always = false) {
  const focused = always || panel.contains(document.activeElement);
  panel.hidden = true;
  if (!focused) return;
  const back = origin && origin.isConnected && !origin.disabled && !panel.contains(origin) ? origin : toggle;
  back.focus();
}

/** Show `text` (as `shown` makes it) in the one-line status `node` (`role="status"`), unless it
 * shows that already: a screen reader reads a status again whenever its text is replaced, by the
 * same text too (the session list reloaded under a filter that matches nothing). */
export function setStatus(node, text) {
  const wanted = shown(text);
  if (node.textContent !== wanted) node.textContent = wanted;
}
