// HTTP client helpers for the Node tests that drive memoryd over several connections:
//   makeClient(port, { tenant })  one client = one node:http Agent with a single keep-alive
//       socket, so N clients are N separate connections, each sending its requests one after
//       another. Returns:
//         post(cmd, onSent)  POST /memory with cmd as JSON; onSent (optional) is called on the
//                            request's 'finish' (the whole request handed to the kernel);
//         get(path)          GET path without a body;
//         sockets            the Set of sockets the client used (one if keep-alive held);
//         close()            destroys the agent and its socket.
//       Both requests resolve {status, headers, text, json, content, isError} (json is the parsed
//       body or null; content/isError its content/is_error), reject on a connection error, and
//       give up after 120 s (safety net). X-Tenant-Id is sent only when a tenant is given.
//   readLines(client, path)  views a file (asserting 200, the view header and line numbers 1, 2, …)
//       and returns its lines without the line numbers.
//   readText(client, path)   the same lines joined with '\n': the file's content.
import assert from 'node:assert/strict';
import http from 'node:http';

export function makeClient(port, { tenant } = {}) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set();
  function request(method, path, body, onSent) {
    return new Promise((resolve, reject) => {
      const headers = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
      if (tenant !== undefined) headers['x-tenant-id'] = tenant;
      const req = http.request({ host: '127.0.0.1', port, path, method, agent, headers }, (res) => {
        const parts = [];
        res.on('data', (c) => parts.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(parts).toString('utf8');
          let json = null;
          try { json = JSON.parse(text); } catch { /* asserted by the caller */ }
          resolve({ status: res.statusCode, headers: res.headers, text, json, content: json?.content, isError: json?.is_error });
        });
      });
      req.on('socket', (s) => sockets.add(s));
      req.on('error', reject);
      if (onSent) req.on('finish', onSent);
      req.setTimeout(120000, () => req.destroy(new Error('request timed out (safety net)')));
      req.end(body);
    });
  }
  return {
    post: (cmd, onSent) => request('POST', '/memory', JSON.stringify(cmd), onSent),
    get: (path) => request('GET', path),
    sockets,
    close: () => agent.destroy(),
  };
}

// The lines of a file, read back with view.
export async function readLines(client, path) {
  const r = await client.post({ command: 'view', path });
  assert.equal(r.status, 200, r.text);
  const [header, ...rest] = r.content.split('\n');
  assert.equal(header, `Here's the content of ${path} with line numbers:`);
  return rest.map((line, i) => {
    const m = /^ *(\d+)\t([^]*)$/.exec(line);
    assert.ok(m && Number(m[1]) === i + 1, `bad view line ${JSON.stringify(line)}`);
    return m[2];
  });
}

// A file's content, read back with view.
export const readText = async (client, path) => (await readLines(client, path)).join('\n');
