// How a tool call's arguments read: edits as diffs, todo_write as a checklist, bash as its
// command, anything else as a key/value list with the raw JSON behind a toggle. Text goes in
// through textContent only (the diff's highlighted code is sanitised in diff.js).
import { foldedText } from './blank_runs.js';
import { diffLines, renderDiff } from './diff.js';
import { el } from './dom.js';

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

export function checklist(todos) {
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
    const shownValue = el('dd');
    shownValue.append(foldedText(text));
    list.append(el('dt', '', key), shownValue);
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
    const command = el('span', 'command');
    command.append(foldedText(args.command));
    readable.append(el('span', 'prompt-sign', '$ '), command);
  } else {
    readable = keyValues(args);
  }
  const toggle = el('details', 'raw-json');
  toggle.append(el('summary', '', 'Raw JSON'), el('pre', 'tool-args', rawJson(raw)));
  box.append(readable, toggle);
  return box;
}

// ---- a collapsed card's one line: the call as a person reads it (as the terminal UI's
// dsh.transcript.call_summary), the arguments' compact JSON for anything else ----

const text = (value) => (typeof value === 'string' && value.trim() ? value : null);
const whole = (value) => (Number.isInteger(value) ? value : null);

function changedLines(before, after) {
  const script = diffLines(before.split('\n'), after.split('\n'));
  const added = script.filter((line) => line.op === '+').length;
  const removed = script.filter((line) => line.op === '-').length;
  return `+${added} -${removed}`;
}

function inPath(key) {
  return (args) => {
    const what = text(args[key]);
    if (what === null) return null;
    const where = text(args.path);
    return where === null ? what : `${what} in ${where}`;
  };
}

const DESCRIBERS = {
  bash(args) {
    const command = text(args.command);
    if (command === null) return null;
    const timeout = whole(args.timeout);
    return timeout === null ? command : `${command} (timeout ${timeout} s)`;
  },
  read_file(args) {
    const path = text(args.path);
    if (path === null) return null;
    const offset = whole(args.offset);
    const limit = whole(args.limit);
    if (offset === null && limit === null) return path;
    const first = offset || 1; // the tool's offset is the first line's number
    return limit === null ? `${path} (from line ${first})` : `${path} (lines ${first}–${first + limit - 1})`;
  },
  edit_file(args) {
    const path = text(args.path);
    if (path === null || typeof args.old !== 'string' || typeof args.new !== 'string') return null;
    return `${path} ${changedLines(args.old, args.new)}`;
  },
  write_file(args) {
    const path = text(args.path);
    if (path === null || typeof args.content !== 'string') return null;
    const lines = args.content === '' ? 0 : args.content.replace(/\n$/, '').split('\n').length;
    return `${path} (${lines} line${lines === 1 ? '' : 's'})`;
  },
  grep: inPath('pattern'),
  glob: inPath('pattern'),
  list_dir(args) {
    return args.path === undefined || args.path === null || args.path === '' ? '.' : text(args.path);
  },
  todo_write(args) {
    const todos = args.todos;
    if (!Array.isArray(todos) || !todos.every((t) => t !== null && typeof t === 'object')) return null;
    const done = todos.filter((t) => t.status === 'completed').length;
    let line = `${todos.length} todo${todos.length === 1 ? '' : 's'}, ${done} done`;
    const current = todos.find((t) => t.status === 'in_progress');
    if (current && text(current.content) !== null) line += ` · now: ${current.content}`;
    return line;
  },
  history_read(args) {
    const checkpoint = text(args.checkpoint);
    if (checkpoint === null) return null;
    const offset = whole(args.offset);
    return offset ? `${checkpoint} from #msg ${offset}` : checkpoint;
  },
  history_search(args) {
    if (typeof args.query !== 'string') return null;
    const checkpoint = text(args.checkpoint);
    const quoted = JSON.stringify(args.query);
    return checkpoint === null ? quoted : `${quoted} in ${checkpoint}`;
  },
};

/** One line for a collapsed card of a call to `name` with `raw` arguments (JSON text). */
export function callSummary(name, raw) {
  let value;
  try {
    value = typeof raw === 'string' ? JSON.parse(raw) : raw;
  } catch {
    return String(raw);
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const describe = Object.prototype.hasOwnProperty.call(DESCRIBERS, name) ? DESCRIBERS[name] : null;
    const line = describe ? describe(value) : null;
    if (line !== null) return line;
    const values = Object.values(value);
    if (values.length === 1 && typeof values[0] === 'string') return values[0];
  }
  return JSON.stringify(value);
}
