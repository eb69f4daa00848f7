// The composer's own commands (composer.js runs them): one table for what the page does with a
// `/word`, Tab's completion of their names (completion.js), `/help` (help.js) and the "Unknown
// command" line, whose list of them is word for word the server's (dsh.web.prompt_commands
// .WEB_COMMANDS: a browser test holds the two equal). Each is the terminal UI's command of the
// same name (dsh.tui.commands.HELP), said for the page; any other `/word` is a prompt command.

/** `{usage, names, does}`: how it is typed, the names it answers to, what it does. */
export const PAGE_COMMANDS = [
  { usage: '/compact [focus]', names: ['compact'], does: 'compact the conversation now (idle sessions only)' },
  {
    usage: '/undo [--dry-run]',
    names: ['undo'],
    does: 'take back the file edits (write_file, edit_file) of the last turn not undone yet, '
      + 'exactly or not at all (bash changes stay); --dry-run lists them',
  },
  { usage: '/context', names: ['context'], does: 'what the model sees: system, tools, stubs, state, tail; cache hits (the Context panel)' },
  { usage: '/cost', names: ['cost'], does: 'billed tokens and a list-price estimate' },
  { usage: '/title [TEXT]', names: ['title'], does: "show the session's title, or rename it (logged)" },
  { usage: '/new, /clear', names: ['new', 'clear'], does: 'start a new session (the one you leave stays listed)' },
  {
    usage: '/model [NAME]',
    names: ['model'],
    does: "show the model and those the server lists, or use NAME for this session's next turns "
      + '(refused when the server does not list it)',
  },
  { usage: '/retry', names: ['retry'], does: "send the last turn's prompt again, when that turn failed or was cancelled" },
  {
    usage: '/rewind [N]',
    names: ['rewind'],
    does: "list the session's prompts, or open a copy of the session up to turn N, its prompt in the "
      + 'composer to change (files stay as they are; the original stays as it is)',
  },
  { usage: '/fork', names: ['fork'], does: 'open a copy of the whole session, to go on another way (the original stays as it is)' },
  {
    usage: '/approval [MODE]',
    names: ['approval'],
    does: 'show the approval mode, or use ask, auto or read-only for this session while dsh web runs '
      + '(the config file is unchanged)',
  },
  { usage: '/diff', names: ['diff'], does: "the workspace's changes since its last commit (git), coloured" },
  {
    usage: '/help',
    names: ['help'],
    does: 'this help, with your prompt commands (/NAME [args]: the text of $DSH_HOME/commands/NAME.md '
      + 'or ./.dsh/commands/NAME.md as the prompt)',
  },
];

/** Every name the page's commands answer to, in the table's order. */
export const PAGE_COMMAND_NAMES = PAGE_COMMANDS.flatMap((command) => command.names);

/** The page's commands as the "Unknown command" line lists them. */
export const PAGE_COMMAND_LIST = PAGE_COMMANDS.map((command) => command.usage).join(', ');

/** The composer's keys, as `/help` lists them. */
export const COMPOSER_KEYS = [
  ['Enter', 'send the prompt'],
  ['Shift+Enter', 'a new line'],
  ['Tab', 'complete a /command or an @path of the workspace; with nothing to complete, move on'],
  ['Up, Down', 'on the first or last line: the prompts sent before (the terminal UI\'s too)'],
  ['Esc', "clear Tab's list of completions; else take back a queued draft; else stop the running turn"],
  ['Ctrl+F', 'find in the session'],
  ['o, a, d, e', 'on an approval (Shift+Tab reaches it): allow once, always, deny, deny with a reason (typed, then Enter); Esc stops the turn (the call not run)'],
];

/** `//text` sends `/text`, as `/help` says it. */
export const SLASH_ESCAPE = ['//text', 'send "/text" as a prompt (a path like /usr/lib/x is sent as it is)'];
