// The e2e backends' restart command (run by stepwatch with execFile, no shell):
//   node restart-sim.mjs <counter-file> <sim-url> <weights-load-seconds>
// Appends one line per run (the race test counts them), then asks the simulator to restart.
import fs from "node:fs";

const [counter, url, seconds] = process.argv.slice(2);
fs.appendFileSync(counter, `${new Date().toISOString()} pid=${process.pid}\n`);
const res = await fetch(`${url}/_sim/restart`, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ weightsLoadSeconds: Number(seconds) }),
});
console.log(`simulator answered ${res.status}`);
process.exit(res.ok ? 0 : 1);
