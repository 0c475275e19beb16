// The trigger of pi #10739, as remote_pi's pi extension delivered mesh messages before its fix
// (jacobaraujo7/remote_pi#62): every inbound message is handed to the agent the moment it
// arrives, with `pi.sendMessage(.., { triggerTurn: true, deliverAs: "followUp" })`, trusting pi
// to queue it when a run is on. Nothing is held back or checked: whether pi is starting a run
// at that moment is pi's business. wakesim's producer messages stand in for the mesh envelopes.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

interface Envelope {
  customType: string;
  content: string;
  display: boolean;
  details?: unknown;
}

export default function meshDelivery(pi: ExtensionAPI) {
  // The factory convention: the returned function is how a message reaches the extension.
  return (envelope: Envelope) => {
    pi.sendMessage(
      { customType: "remote-pi.mesh", content: envelope.content, display: true, details: envelope.details },
      { triggerTurn: true, deliverAs: "followUp" }
    );
  };
}
