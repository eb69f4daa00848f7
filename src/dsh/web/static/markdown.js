// Markdown for messages: marked (GFM) -> highlight.js for fenced code -> DOMPurify.
// Raw HTML in a message is shown as text, never interpreted; links open in a new tab without a
// referrer (the page URL carries the access token); a bidi control shows as its escape, and a C0
// control (ESC, BEL, a lone CR) is dropped, as the terminal UI drops it (dom.js).
// An image the page may load (this origin's, or a data: URL) shows as an image; one from another
// site, which the page's CSP (img-src 'self' data:) refuses, as a link to it instead of a broken
// image and a console error: its alt text (else its URL), made by marked's link renderer and
// sanitised as every other link (DOMPurify drops a javascript: href).
import { Marked } from './vendor/marked/marked.esm.js';
import hljs from './vendor/highlight/highlight.min.js';
import DOMPurify from './vendor/dompurify/purify.es.mjs';
import { plain, shown } from './dom.js';

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** Whether the page's CSP lets it load an image from `href`: this origin's, or a data: URL. */
function loadable(href) {
  try {
    const url = new URL(href, document.baseURI);
    return url.protocol === 'data:' || url.origin === location.origin;
  } catch {
    return false;
  }
}

// An image's words: its alt text's tokens, else its URL as text.
const imageWords = (token) =>
  token.tokens?.length ? token.tokens : [{ type: 'text', raw: token.href, text: token.href }];

// In a link, an image the page cannot load is its words (a link holds no link).
function unlinkedImages(tokens) {
  return tokens.map((token) => {
    if (token.type === 'image' && !loadable(token.href)) {
      return { type: 'text', raw: token.raw, text: token.text, tokens: unlinkedImages(imageWords(token)) };
    }
    if (token.tokens) token.tokens = unlinkedImages(token.tokens);
    return token;
  });
}

const RENDERER = {
  renderer: {
    html(token) {
      return escapeHtml(token.text);
    },
    image(token) {
      if (loadable(token.href)) return false;  // marked's <img>, as ever
      const { href, title, raw } = token;
      return this.link({ type: 'link', raw, href, title, text: token.text || href, tokens: imageWords(token) });
    },
    link(token) {
      token.tokens = unlinkedImages(token.tokens || []);
      return false;  // marked's link, with those words
    },
    code(token) {
      const lang = (token.lang || '').trim().split(/\s+/)[0].toLowerCase();
      let body;
      let cls = 'hljs';
      if (lang && hljs.getLanguage(lang)) {
        body = hljs.highlight(token.text, { language: lang, ignoreIllegals: true }).value;
        cls += ` language-${lang}`;
      } else {
        body = escapeHtml(token.text);
      }
      return `<pre><code class="${cls}">${body}</code></pre>\n`;
    },
  },
};
const marked = new Marked({ gfm: true, breaks: false, async: false }).use(RENDERER);
// A person's prompt and a reply keep their line breaks (as typed or written, and as the
// terminal UI shows a prompt and a plain reply): one newline is a line break, not a space.
const typed = new Marked({ gfm: true, breaks: true, async: false }).use(RENDERER);

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

const PURIFY = { USE_PROFILES: { html: true }, FORBID_TAGS: ['style', 'form', 'input', 'button'] };

/** Markdown as safe HTML; `breaks`: every newline is a line break (a prompt, a reply). */
export function renderMarkdown(text, { breaks = false } = {}) {
  return DOMPurify.sanitize((breaks ? typed : marked).parse(shown(plain(text || ''))), PURIFY);
}
