// The page's chrome: the theme (auto, light, dark; remembered), the session list's drawer and
// its search filter (a filter that matches nothing says so in a polite status); number and date
// formats.
import { setStatus } from './dom.js';

const $ = (id) => document.getElementById(id);

const THEMES = ['auto', 'light', 'dark'];

export function applyTheme(theme) {
  const root = document.documentElement;
  if (theme === 'auto') delete root.dataset.theme; else root.dataset.theme = theme;
  const light = $('hljs-light');
  const dark = $('hljs-dark');
  light.media = theme === 'auto' ? '(prefers-color-scheme: light)' : theme === 'light' ? 'all' : 'not all';
  dark.media = theme === 'auto' ? '(prefers-color-scheme: dark)' : theme === 'dark' ? 'all' : 'not all';
  $('theme-toggle').textContent = `Theme: ${theme}`;
  try { localStorage.setItem('dsh-theme', theme); } catch { /* storage off: this page only */ }
}

export function storedTheme() {
  try {
    const theme = localStorage.getItem('dsh-theme');
    return THEMES.includes(theme) ? theme : 'auto';
  } catch {
    return 'auto';
  }
}

export function setSidebar(open) {
  document.body.dataset.sidebar = open ? 'open' : 'closed';
  $('sidebar-toggle').setAttribute('aria-expanded', String(open));
}

export function nextTheme() {
  const now = document.documentElement.dataset.theme || 'auto';
  return THEMES[(THEMES.indexOf(now) + 1) % THEMES.length];
}

// The search box keeps the sessions whose date, workspace or id contain every word typed.
export function filterSessions() {
  const words = $('session-search').value.toLowerCase().split(/\s+/).filter(Boolean);
  let shown = 0;
  for (const item of $('session-list').querySelectorAll('.session-item')) {
    const text = item.textContent.toLowerCase();
    item.hidden = !words.every((w) => text.includes(w));
    if (!item.hidden) shown += 1;
  }
  setStatus($('session-none'), shown > 0 || words.length === 0 ? '' : 'No session matches.');
}

export function fmtTokens(n) {
  if (n === null || n === undefined) return '–';
  if (n >= 1000) return `${(n / 1000).toFixed(n >= 100000 ? 0 : 1)}k`;
  return String(n);
}

export function fmtWhen(ms) {
  const d = new Date(ms);
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}
