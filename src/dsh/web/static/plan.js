// The plan pinned over the composer, as the terminal UI's plan panel: the todo list of the
// session's latest `todo_write` (`todo/write` event), shown while any item is not done — from
// the session info's `plan` when a session is shown (or the stream's hello after a reconnect),
// then from each `todo/write` the live stream brings. Its head counts what is done and names
// the item in progress, in the terminal UI's words (dsh.transcript.plan.plan_head); the list is
// the tool card's checklist (tools.js), scrolled so the item in progress shows. A click on the
// head folds it to that one line, and it stays folded across updates until opened again.
import { el } from './dom.js';
import { checklist } from './tools.js';

const done = (todo) => todo.status === 'completed';
const valid = (todo) => todo && typeof todo === 'object' && typeof todo.content === 'string';

/** `plan · 1 of 3 done · now: write tests` (the item in progress's first line). */
export function planHead(todos) {
  const head = `plan · ${todos.filter(done).length} of ${todos.length} done`;
  const now = todos.find((todo) => todo.status === 'in_progress');
  if (!now) return head;
  const text = now.content.trim();
  const line = text.split('\n', 1)[0];
  return `${head} · now: ${line === text ? line : `${line} …`}`;
}

export class PlanPanel {
  // `box`: the `#plan` section.
  constructor(box) {
    this.box = box;
    this.folded = false;
  }

  /** Pin `todos` (the session's newest list; null or [] for none). */
  show(todos) {
    const list = Array.isArray(todos) ? todos.filter(valid) : [];
    this.box.hidden = !list.some((todo) => !done(todo));
    if (this.box.hidden) {
      this.box.replaceChildren();
      return;
    }
    const details = el('details', 'plan-details');
    details.open = !this.folded;
    details.addEventListener('toggle', () => { this.folded = !details.open; });
    details.append(el('summary', 'plan-head', planHead(list)), checklist(list));
    this.box.replaceChildren(details);
    details.querySelector('.todo.in_progress')?.scrollIntoView({ block: 'nearest' });
  }
}
