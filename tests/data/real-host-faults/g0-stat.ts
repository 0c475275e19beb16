// G0 (adapters/node/examples/g0-raw.ts) with one real file-system call before each send: a
// promise that settles at a wall-clock moment, outside the run's virtual time. Its runs cannot
// replay the same, so the driver refuses them (tests/real_host_faults.rs).
import fs from "node:fs";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import g0 from "../../../adapters/node/examples/g0-raw.ts";

export default function g0Stat(pi: ExtensionAPI, options: any) {
  const send = g0(pi, options);
  return (message: any, deliveryOptions: any) => {
    fs.promises.stat(".").then(() => send(message, deliveryOptions));
  };
}
