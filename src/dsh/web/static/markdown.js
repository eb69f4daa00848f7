// Markdown for messages: marked (GFM) -> highlight.js for fenced code -> DOMPurify.
// Raw HTML in a message is shown as text, never interpreted; links open in a new tab without a
// referrer (the page URL carries the access token).
import { Marked } from './vendor/marked/marked.esm.js';
import hljs from './vendor/highlight/highlight.min.js';
import DOMPurify from './vendor/dompurify/purify.es.mjs';

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const marked = new Marked({ gfm: true, breaks: false, async: false });
marked.use({
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
});

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

const PURIFY = { USE_PROFILES: { html: true }, FORBID_TAGS: ['style', 'form', 'input', 'button'] };

export function renderMarkdown(text) {
  return DOMPurify.sanitize(marked.parse(text || ''), PURIFY);
}
