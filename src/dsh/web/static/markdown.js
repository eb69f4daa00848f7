// Markdown for messages: marked (GFM) -> highlight.js for fenced code -> DOMPurify.
// Raw HTML in a message is shown as text, never interpreted; links open in a new tab without a
// referrer (the page URL carries the access token); a bidi control shows as its escape (dom.js).
import { Marked } from './vendor/marked/marked.esm.js';
import hljs from './vendor/highlight/highlight.min.js';
import DOMPurify from './vendor/dompurify/purify.es.mjs';
import { shown } from './dom.js';

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const RENDERER = {
  renderer: {
    html(token) {
      return escapeHtml(token.text);
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
// A person's prompt keeps its line breaks (as typed, and as the terminal UI shows it).
const typed = new Marked({ gfm: true, breaks: true, async: false }).use(RENDERER);

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

const PURIFY = { USE_PROFILES: { html: true }, FORBID_TAGS: ['style', 'form', 'input', 'button'] };

/** Markdown as safe HTML; `breaks`: every newline is a line break (a person's prompt). */
export function renderMarkdown(text, { breaks = false } = {}) {
  return DOMPurify.sanitize((breaks ? typed : marked).parse(shown(text || '')), PURIFY);
}
