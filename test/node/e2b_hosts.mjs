// Preloaded (node --import) by the Go test of host routing: connections
// to any host under E2B_HOSTS_DOMAIN go to the loopback listener
// E2B_HOSTS_ADDR instead (the wildcard DNS and port 443 a deployment
// would have), keeping the host name for TLS and the Host header.
import net from "node:net";
import tls from "node:tls";

const domain = process.env.E2B_HOSTS_DOMAIN;
const [addrHost, addrPort] = (process.env.E2B_HOSTS_ADDR || "").split(":");
const ours = (h) => typeof h === "string" && (h === domain || h.endsWith("." + domain));
const redirect = (orig) =>
  function (...args) {
    const o = args[0];
    if (o && typeof o === "object" && ours(o.host)) {
      args[0] = { ...o, servername: o.servername || o.host, host: addrHost, port: Number(addrPort) };
    }
    return orig.apply(this, args);
  };
tls.connect = redirect(tls.connect);
net.connect = redirect(net.connect);
