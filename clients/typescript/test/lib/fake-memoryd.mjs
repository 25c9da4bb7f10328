// A programmable stand-in for memoryd (or a proxy in front of it) on loopback.
//
//   const fake = await startFakeMemoryd((req, n) => action);   // n: 0-based request number
//   fake.url, fake.requests ({ method, url, headers, body }), await fake.close()
//
// An action is one of:
//   { status, json }            answer JSON (e.g. a tool_result)
//   { status, text, type }      answer a raw body with content type `type`
//   { hang: true }              read the request, never answer
//   { destroy: true }           read the request, close the connection (no answer)
//   { reset: true }             read the request, reset the connection (RST)
//   { partial: true }           send headers and half a body, then close
// plus optional `headers` (extra response headers) and `delayMs`.
import http from 'node:http';

export function toolResult(content, isError = false) {
  return { type: 'tool_result', content, is_error: isError };
}

export const OVERLOADED = 'Error: memoryd is overloaded; the command was not applied. Retry shortly.';

export async function startFakeMemoryd(handler, { port = 0 } = {}) {
  const requests = [];
  const sockets = new Set();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const n = requests.length;
      requests.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const action = (await handler(req, n)) ?? { status: 500, text: 'no action', type: 'text/plain' };
      if (action.delayMs) await new Promise((r) => setTimeout(r, action.delayMs));
      if (action.hang) return;
      if (action.destroy) return req.socket.destroy();
      if (action.reset) return req.socket.resetAndDestroy();
      const headers = { ...(action.headers ?? {}) };
      let body;
      if (action.json !== undefined) {
        body = JSON.stringify(action.json);
        headers['content-type'] = 'application/json';
      } else {
        body = action.text ?? '';
        if (action.type) headers['content-type'] = action.type;
      }
      if (action.partial) {
        headers['content-length'] = String(Buffer.byteLength(body));
        res.writeHead(action.status ?? 200, headers);
        res.write(body.slice(0, Math.floor(body.length / 2)));
        setTimeout(() => req.socket.destroy(), 20);
        return;
      }
      res.writeHead(action.status ?? 200, headers);
      res.end(body);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    port: server.address().port,
    requests,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A loopback port with nothing listening on it. */
export async function closedPort() {
  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}
