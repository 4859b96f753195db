/** Thrown when a replica that no longer holds the lease with its epoch tries to act: nothing was written. */
export class LeaseLostError extends Error {
  constructor(holder: string, epoch: number | null) {
    super(epoch === null ? `${holder} does not lead: the action was not taken` : `${holder} no longer leads with epoch ${epoch}: the action was not taken`);
    this.name = "LeaseLostError";
  }
}
