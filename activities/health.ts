import * as os from 'node:os';

export interface HealthActivities {
  healthEcho(input: { message: string }): Promise<{ echoed: string; activityHost: string }>;
}

export function createHealthActivities(): HealthActivities {
  return {
    async healthEcho({ message }) {
      return { echoed: message, activityHost: `${os.hostname()}:${process.pid}` };
    },
  };
}
