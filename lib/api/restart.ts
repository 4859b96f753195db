/**
 * The route surface of the one restart verb (lib/restart/request.ts): the operator's request is
 * handed to it with the collaborators the root builds (lib/runtime.ts restartDeps), and the event
 * comes back as the API's shape. The action runs in the background; its failure is logged.
 */
import { requestRestart, type RestartInput } from "../restart/request";
import { getRuntime, restartDeps } from "../runtime";
import { restartDTO } from "./snapshot";
import type { RestartEventDTO } from "./types";

export async function restartBackend(input: RestartInput): Promise<RestartEventDTO> {
  const rt = await getRuntime();
  const { event, done, evidenceId } = requestRestart(input, restartDeps(rt));
  done.catch((e) => console.error(`stepwatch: restart #${event.id} of ${input.backendId}: ${(e as Error).message}`));
  return restartDTO(event, evidenceId);
}
