// SPDX-License-Identifier: LGPL-2.1-or-later
// mcp-exec-proxy.js: node's http, https and fetch() through the egress proxy
// that a run with a network has in its environment (http_proxy, https_proxy:
// the launcher's listener on 127.0.0.1:3128, launch-egress.h), as curl and
// Python's urllib reach it by themselves. Node before 24 reads none of those
// variables, so without this a JavaScript program with a network reached
// nothing but by naming the proxy itself. mcp-exec-bootstrap.js loads it
// before "ready", in units with those variables only.
//
// It decides nothing: what a run may reach is egressd's policy, and around
// the proxy there is no route (the unit's network namespace has only lo). A
// program that passes its own agent or dispatcher, or speaks to sockets
// itself, simply gets no proxy, as with curl --noproxy.
'use strict';

const http = require('http');
const https = require('https');
const net = require('net');
const tls = require('tls');

// Loopback: the proxy itself (a program that names it, as it had to before
// this file), and nothing else there (a run with a network may not listen).
function isLoopback(host) {
        return host === 'localhost' || /^127\./.test(host) || host === '::1' || host === '[::1]';
}

// A host as a URL or a CONNECT names it: an IPv6 address in brackets.
function hostForm(host) {
        return net.isIPv6(host) ? `[${host}]` : host;
}

// http: every request in absolute form to the proxy, one connection each
// (egressd judges each request's host). https: a CONNECT tunnel, then TLS to
// the host through it, verified as ever (egressd checks the ClientHello's
// name against the CONNECT).
function useEnvProxy(env) {
        const spec = env.https_proxy || env.HTTPS_PROXY || env.http_proxy || env.HTTP_PROXY;
        if (!spec)
                return false;
        const proxy = new URL(spec);
        const proxyHost = proxy.hostname;
        const proxyPort = Number(proxy.port) || 80;

        // http: absolute-form requests to the proxy, one connection each.
        class HttpProxyAgent extends http.Agent {
                addRequest(req, options) {
                        const host = options.host || options.hostname || 'localhost';
                        if (isLoopback(host) || /^[a-z]+:\/\//i.test(req.path) || req.method === 'CONNECT') {
                                super.addRequest(req, options);
                                return;
                        }
                        const port = options.port && Number(options.port) !== 80 ? `:${options.port}` : '';
                        req.path = `http://${hostForm(host)}${port}${req.path}`;
                        super.addRequest(req, { ...options, host: proxyHost, hostname: proxyHost, port: proxyPort,
                                                localAddress: undefined });
                }
        }
        // https: a CONNECT tunnel through the proxy, then TLS to the host.
        class HttpsProxyAgent extends https.Agent {
                createConnection(options, callback) {
                        const host = options.host || options.hostname || 'localhost';
                        const port = Number(options.port) || 443;
                        if (isLoopback(host))
                                return super.createConnection(options, callback);
                        const target = `${hostForm(host)}:${port}`;
                        const raw = net.connect(proxyPort, proxyHost);
                        let head = Buffer.alloc(0);
                        const fail = (err) => {
                                raw.destroy();
                                callback(err);
                        };
                        const onData = (chunk) => {
                                head = Buffer.concat([head, chunk]);
                                const end = head.indexOf('\r\n\r\n');
                                if (end < 0) {
                                        if (head.length > 16384)
                                                fail(new Error('the proxy sent an over-long answer to CONNECT'));
                                        return;
                                }
                                raw.removeListener('data', onData);
                                raw.removeListener('error', fail);
                                const status = head.subarray(0, head.indexOf('\r\n')).toString('latin1');
                                if (!/^HTTP\/1\.[01] 2\d\d\b/.test(status)) {
                                        const e = new Error(`the proxy refused CONNECT ${target}: ${status}`);
                                        e.code = 'ECONNREFUSED';
                                        fail(e);
                                        return;
                                }
                                if (head.length > end + 4)
                                        raw.unshift(head.subarray(end + 4));
                                const servername = options.servername ?? (net.isIP(host) ? undefined : host);
                                callback(null, tls.connect({ ...options, socket: raw, servername }));
                        };
                        raw.on('data', onData);
                        raw.once('error', fail);
                        raw.once('connect', () =>
                                raw.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`));
                        return undefined;
                }
        }
        http.globalAgent = new HttpProxyAgent({ keepAlive: false });
        https.globalAgent = new HttpsProxyAgent({ keepAlive: false });
        installFetchDispatcher();
        return true;
}

// A dispatcher's request headers, as http.request takes them: undici hands
// them as an object, flat [name, value, ...] or [[name, value], ...] by version.
function headerList(h) {
        const out = {};
        // A name given twice keeps both values, as node sends them.
        const add = (k, v) => {
                out[k] = out[k] === undefined ? v : [].concat(out[k], v);
        };

        if (!h)
                return out;
        if (Array.isArray(h)) {
                if (h.length && Array.isArray(h[0]))
                        for (const [k, v] of h)
                                add(k, v);
                else
                        for (let i = 0; i + 1 < h.length; i += 2)
                                add(String(h[i]), String(h[i + 1]));
                return out;
        }
        if (typeof h[Symbol.iterator] === 'function') {
                for (const [k, v] of h)
                        out[k] = v;
                return out;
        }
        return { ...h };
}

async function writeBody(req, body) {
        if (body == null)
                return req.end();
        if (typeof body === 'string' || body instanceof Uint8Array)
                return req.end(body);
        for await (const chunk of body)
                if (!req.write(chunk))
                        await new Promise((resolve) => req.once('drain', resolve));
        req.end();
}

// fetch() (undici inside node: 5.x in node 18, 6.x in 20) has no agent to set;
// it takes the dispatcher at this global symbol, which undici's own
// setGlobalDispatcher() sets. This one sends each request through http or
// https with the agents above; fetch keeps its own redirects, decoding and
// aborts (the abort handed to onConnect destroys the request).
function installFetchDispatcher() {
        const dispatcher = {
                dispatch(opts, handler) {
                        const u = new URL(opts.path, opts.origin);
                        const mod = u.protocol === 'https:' ? https : http;
                        const req = mod.request(u, { method: opts.method, headers: headerList(opts.headers) });
                        let done = false;
                        const error = (err) => {
                                if (done)
                                        return;
                                done = true;
                                handler.onError(err);
                        };
                        handler.onConnect((err) => {
                                req.destroy(err);
                                error(err || new Error('aborted'));
                        });
                        req.on('error', error);
                        req.on('response', (res) => {
                                const raw = res.rawHeaders.map((x) => Buffer.from(x, 'latin1'));
                                const resume = () => res.resume();
                                if (handler.onHeaders(res.statusCode, raw, resume, res.statusMessage) === false)
                                        res.pause();
                                res.on('data', (chunk) => {
                                        if (!done && handler.onData(chunk) === false)
                                                res.pause();
                                });
                                res.on('end', () => {
                                        if (done)
                                                return;
                                        done = true;
                                        handler.onComplete([]);
                                });
                                res.on('error', error);
                        });
                        writeBody(req, opts.body).catch(error);
                        return true;
                },
                close() {
                        return Promise.resolve();
                },
                destroy() {
                        return Promise.resolve();
                },
        };
        globalThis[Symbol.for('undici.globalDispatcher.1')] = dispatcher;
}

module.exports = { useEnvProxy };
