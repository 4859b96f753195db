/**
 * `npm run --silent hash-password` reads a password from stdin (never from argv, which lands in
 * shell history and `ps`) and prints the "scrypt:..." value for an operator in the config.
 */
import { hashPassword } from "../auth/password";

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "");
}

async function main(): Promise<void> {
  if (process.stdin.isTTY) process.stderr.write("Password (then Enter, Ctrl-D): ");
  const password = await readStdin();
  if (password.length < 8) {
    process.stderr.write("hash-password: use at least 8 characters\n");
    process.exit(64);
  }
  process.stdout.write(`${await hashPassword(password)}\n`);
}

main().catch((err) => {
  process.stderr.write(`hash-password: ${(err as Error).message}\n`);
  process.exit(1);
});
