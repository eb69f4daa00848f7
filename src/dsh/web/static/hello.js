// Whether the server at this page's address is the dsh web that gave the page its token, asked
// without sending the token (`dsh.web.hello`). Once dsh web stops its port is free, and whatever
// listens there next (another local user's program) would be sent the token by a page that
// reconnects with it. So after any disconnect (a live stream that dropped, a fetch that failed
// on the network) the page sends the token again only once the server answered
// `GET /api/hello?nonce=N`, a fresh random nonce, with HMAC-SHA256(key, "dsh-web-hello\n" +
// Host + "\n" + nonce), the key the token stretched with PBKDF2 (as the server makes it): a
// server that knows the token can make it, one that does not cannot, and the answer says
// nothing of the token. 127.0.0.1 and localhost are secure contexts, where `crypto.subtle` is.
const ITERATIONS = 100000;  // dsh.web.hello.ITERATIONS
const SALT = 'dsh-web-hello';
const ASK_MS = 10000;  // a listener that never answers counts as no server: asked again later
const encoder = new TextEncoder();
const keys = new Map();  // token → the HMAC key it stretches to (a promise of it)
/** Whether this page can check a proof: a plain-http page from another machine (a non-loopback
 * bind) is no secure context and has no `crypto.subtle`; it is sent no proof it could check. */
export const canCheck = () => Boolean(globalThis.crypto?.subtle);

/** The hello key of `token`: derived once per page, as the server derives it. */
function helloKey(token) {
  if (!keys.has(token)) {
    keys.set(token, (async () => {
      const base = await crypto.subtle.importKey('raw', encoder.encode(token), 'PBKDF2', false, ['deriveKey']);
      return crypto.subtle.deriveKey(
        { name: 'PBKDF2', salt: encoder.encode(SALT), iterations: ITERATIONS, hash: 'SHA-256' },
        base, { name: 'HMAC', hash: 'SHA-256', length: 256 }, false, ['verify'],
      );
    })());
  }
  return keys.get(token);
}

function freshNonce() {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The bytes of a lower-case hex string, or null for anything else. */
function hexBytes(text) {
  if (typeof text !== 'string' || !/^(?:[0-9a-f]{2})+$/.test(text)) return null;
  return Uint8Array.from(text.match(/../g), (pair) => parseInt(pair, 16));
}

/** 'proven': the server here knows `token`; 'unreachable': nothing answered (ask again later);
 * 'unproven': something answered that cannot prove it (another program, a dsh web with
 * another token or without this route): it must not be sent the token. */
export async function askServer(token) {
  if (!canCheck()) return 'unproven';
  const nonce = freshNonce();
  let response;
  try {
    response = await fetch(`/api/hello?nonce=${nonce}`, {
      cache: 'no-store', credentials: 'omit', signal: AbortSignal.timeout(ASK_MS),
    });
  } catch {
    return 'unreachable';
  }
  try {
    const proof = hexBytes(response.ok ? (await response.json()).proof : null);
    if (proof === null) return 'unproven';
    const signed = encoder.encode(`dsh-web-hello\n${location.host}\n${nonce}`);
    return (await crypto.subtle.verify('HMAC', await helloKey(token), proof, signed)) ? 'proven' : 'unproven';
  } catch {
    return 'unproven';  // not JSON, cut short: no proof
  }
}
