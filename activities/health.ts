import * as os from 'node:os';
import type { HealthActivities } from '../common/health';

export function createHealthActivities(): HealthActivities {
  return {
    async healthEcho({ message }) {
      return { echoed: message, activityHost: `${os.hostname()}:${process.pid}` };
    },
  };
}
