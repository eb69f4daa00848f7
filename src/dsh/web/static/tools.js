// How a tool call's arguments read: edits as diffs, todo_write as a checklist, bash as its
// command, anything else as a key/value list with the raw JSON behind a toggle. Text goes in
// through textContent only (the diff's highlighted code is sanitised in diff.js).
import { renderDiff } from './diff.js';

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function parse(raw) {
  if (raw !== null && typeof raw === 'object') return raw;
  try {
    const value = JSON.parse(raw);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

function rawJson(raw) {
  const text = typeof raw === 'string' ? raw : JSON.stringify(raw);
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

const STATUS_MARK = { completed: '☑', in_progress: '◐', pending: '☐' };

function checklist(todos) {
  const list = el('ul', 'todo-list');
  for (const todo of todos) {
    const status = todo && typeof todo.status === 'string' ? todo.status : 'pending';
    const item = el('li', `todo ${status.replace(/[^a-z_]/g, '')}`);
    item.append(el('span', 'todo-mark', STATUS_MARK[status] || '☐'),
      el('span', 'todo-text', String(todo && todo.content !== undefined ? todo.content : '')));
    list.append(item);
  }
  return list;
}

function keyValues(args) {
  const list = el('dl', 'kv');
  for (const [key, value] of Object.entries(args)) {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    list.append(el('dt', '', key), el('dd', '', text));
  }
  return list;
}

function isText(value) {
  return typeof value === 'string';
}

/** The readable body of a call's arguments (`raw`: the JSON text or an object). */
export function renderArguments(name, raw) {
  const args = parse(raw);
  const box = el('div', `tool-args-view tool-${String(name).replace(/[^A-Za-z0-9_-]/g, '')}`);
  if (!args) {
    box.append(el('pre', 'tool-args', rawJson(raw)));
    return box;
  }
  let readable = null;
  if (name === 'edit_file' && isText(args.old) && isText(args.new)) {
    readable = renderDiff(args.path, args.old, args.new);
  } else if (name === 'write_file' && isText(args.content)) {
    readable = renderDiff(args.path, '', args.content);
    readable.classList.add('whole-file');
  } else if (name === 'todo_write' && Array.isArray(args.todos)) {
    readable = checklist(args.todos);
  } else if (name === 'bash' && isText(args.command)) {
    readable = el('pre', 'bash-command');
    readable.append(el('span', 'prompt-sign', '$ '), el('span', 'command', args.command));
  } else {
    readable = keyValues(args);
  }
  const toggle = el('details', 'raw-json');
  toggle.append(el('summary', '', 'Raw JSON'), el('pre', 'tool-args', rawJson(raw)));
  box.append(readable, toggle);
  return box;
}
