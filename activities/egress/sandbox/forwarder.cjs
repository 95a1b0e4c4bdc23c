// The sandbox side of the egress proxy: listens on 127.0.0.1:<port> inside the container (which has
// no network) and pipes each connection to the hands worker's proxy through the unix socket mounted
// from the host. It holds no policy and no secret; the proxy on the host decides everything.
// Plain JavaScript: it runs under the sandbox image's own node, mounted read-only.
'use strict';
const net = require('node:net');

const port = Number(process.argv[2]);
const socketPath = process.argv[3];

const server = net.createServer((client) => {
  const upstream = net.connect(socketPath);
  upstream.on('connect', () => {
    client.pipe(upstream);
    upstream.pipe(client);
  });
  upstream.on('error', () => {
    const body =
      'the egress proxy of this sandbox is not running right now (the hands worker restarts it); retry the command\n';
    client.end(
      `HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  client.on('error', () => upstream.destroy());
  client.on('close', () => upstream.destroy());
});
server.listen(port, '127.0.0.1');
