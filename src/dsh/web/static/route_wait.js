// A route's server loading its model (llama-server answers 503 "Loading model" meanwhile), which
// dsh web waits for while it resolves a route (route_wait.py: the server's at start, a new
// session's first prompt, a session reopened on its recorded route, `/model NAME`): its line
// shows under the header until the wait ends, resolved or refused. The waits come over the
// server's stream (its hello's `routeWaits`, then a `route-wait` frame as each starts or ends),
// each naming the session it is for (null: the server's own); the page shows the shown
// session's, else the server's.
const $ = (id) => document.getElementById(id);
const waits = new Map();  // session id (null: the server's) → its line
let shown = () => null;

function paint() {
  const text = waits.get(shown()) ?? waits.get(null) ?? null;
  const bar = $('route-wait');
  bar.textContent = text ?? '';
  bar.hidden = !text;
}

/** `sessionId`: the id of the session the page shows (null: none). */
export function showRouteWaits(sessionId) {
  shown = sessionId;
  paint();
}

/** A frame of the server's stream: its hello (the waits going on) or a `route-wait`. */
export function routeWaitFrame(data) {
  if (data.kind === 'hello') {
    waits.clear();
    for (const wait of data.routeWaits ?? []) waits.set(wait.session, wait.text);
  } else if (data.kind === 'route-wait') {
    if (data.text) waits.set(data.session, data.text);
    else waits.delete(data.session);
  } else {
    return;
  }
  paint();
}

/** The page shows another session: its wait, if any. */
export function repaintRouteWait() {
  paint();
}
