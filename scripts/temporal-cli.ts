/** `npm run temporal:install`: find or install the temporal CLI binary and print where it is. */
import { cliVersion, ensureTemporalCli } from '../platform/temporal-cli';
import { runMain } from '../client/main';

runMain(async () => {
  const cli = await ensureTemporalCli((line) => console.log(line));
  console.log(`${cliVersion(cli)} at ${cli.path} (${cli.source})`);
});
