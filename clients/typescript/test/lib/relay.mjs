// An HTTP relay on loopback between a client (or nginx) and a real memoryd, which loses
// requests or answers on purpose: the failures that leave a write's outcome unknown to the
// client, made at an exact point of the exchange.
//
//   const relay = await startRelay({ upstreamPort, plan: (n, request) => action });
//   relay.url, relay.port, relay.exchanges, await relay.close()
//
// plan(n, request) is asked for the n-th request (0-based; request: { method, url, headers,
// body }) and returns (or resolves to) one of:
//   'pass'                      forward the request to memoryd, then memoryd's answer back
//   { lose: 'answer', after }   forward the request, wait for memoryd's WHOLE answer (memoryd
//                               answers a write after its commit), await `after()` (e.g. kill
//                               memoryd), then close the client's connection without an answer
//   { lose: 'request', after }  forward the request but its last byte, wait 150 ms (memoryd has
//                               the rest), await `after()`, then close both connections
// (`after`, not `then`: an object with a `then` method is a thenable, which `await` would call.)
// Whatever the plan, when memoryd cannot be reached the client's connection is closed
// without an answer, as a TCP relay's would be.
//
// relay.exchanges lists each request with its action and, when there was one, memoryd's
// answer ({ status, headers, body }).
import http from 'node:http';

export async function startRelay({ upstreamPort, plan = () => 'pass' }) {
  const exchanges = [];
  const sockets = new Set();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const exchange = { n: exchanges.length, method: req.method, url: req.url, headers: req.headers, body: body.toString('utf8') };
      exchanges.push(exchange);
      let action;
      try {
        action = (await plan(exchange.n, exchange)) ?? 'pass';
      } catch (e) {
        exchange.error = e;
        return req.socket.destroy();
      }
      exchange.action = typeof action === 'string' ? action : `lose ${action.lose}`;

      const headers = { ...req.headers, 'content-length': String(body.length) };
      delete headers.connection;
      delete headers['keep-alive'];
      const up = http.request({ host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.url, headers, agent: false });
      // Set while the relay loses the exchange itself: then the upstream connection failing
      // (memoryd killed by `after`) must not close the client's connection early.
      let losing = false;
      up.on('error', (e) => {
        exchange.upstreamError ??= e.code ?? String(e);
        if (!losing) req.socket.destroy();
      });

      if (action !== 'pass' && action.lose === 'request') {
        losing = true;
        up.write(body.subarray(0, Math.max(0, body.length - 1)));
        await new Promise((r) => setTimeout(r, 150));
        await action.after?.();
        up.destroy();
        req.socket.destroy();
        return;
      }

      up.on('response', (answer) => {
        const parts = [];
        answer.on('data', (c) => parts.push(c));
        answer.on('error', () => req.socket.destroy());
        answer.on('end', async () => {
          const text = Buffer.concat(parts);
          exchange.answer = { status: answer.statusCode, headers: answer.headers, body: text.toString('utf8') };
          if (action !== 'pass') {
            losing = true;
            await action.after?.();
            req.socket.destroy();
            return;
          }
          const back = { ...answer.headers, 'content-length': String(text.length) };
          delete back.connection;
          delete back['keep-alive'];
          delete back['transfer-encoding'];
          res.writeHead(answer.statusCode, back);
          res.end(text);
        });
      });
      up.end(body);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    exchanges,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
