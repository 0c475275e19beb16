// G4, gentle-agents' upstream delivery, as an extension. Scenario options select the variant:
// {} is pi.gentle, { fixed = true } pi.gentle-fixed, { t3 = false } pi.gentle-pre-t3,
// { t2 = false, t3 = false } pi.gentle-pre-t2.
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { createGentleAgents, type GentleOptions } from "./gentle/gentle-agents";

export default function g4(pi: ExtensionAPI, options: GentleOptions) {
  return createGentleAgents(pi, options);
}
