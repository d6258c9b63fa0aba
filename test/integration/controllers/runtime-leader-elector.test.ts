import {
  CoordinationV1Api,
  RbacAuthorizationV1Api,
  V1MicroTime,
  type V1Lease,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, eventuallyPasses } from '../../support/eventually.js';
import { LeaderElector, type LeaderElectionOptions } from '../../../controllers/runtime/leader-election.js';
import { serviceAccountWithRole } from '../../support/kube/envtest.js';
import { createNamespace, env, logger, metricValue, useKubeTestEnv } from './runtime-support.js';

// The controller runtime's LeaderElector on a real Lease in a real kube-apiserver: two candidates
// and a release, an abandoned lease, a leader that stops without releasing (a crash), renewals
// that fail when the right to write Leases is revoked, and timings that are refused.
// (leader-election.test.ts covers whole controller replicas electing a leader.)

useKubeTestEnv();

let leases: CoordinationV1Api;

beforeAll(() => {
  leases = env.kubeConfig().makeApiClient(CoordinationV1Api);
});

describe('LeaderElector', () => {
  const namespace = 'leader-election';
  const running: LeaderElector[] = [];

  beforeAll(async () => {
    await createNamespace(namespace);
  });

  afterAll(async () => {
    await Promise.all(running.map((elector) => elector.stop()));
  });

  /** How many candidates of one lease are leading right now, and the most there ever were. */
  const leadership = new Map<string, { now: number; most: number }>();

  interface Candidate {
    elector: LeaderElector;
    /** onStartedLeading / onStoppedLeading calls so far. */
    calls: { started: number; stopped: number };
  }

  function candidate(
    identity: string,
    options: Partial<LeaderElectionOptions> & Pick<LeaderElectionOptions, 'leaseName'>,
  ): Candidate {
    const calls = { started: 0, stopped: 0 };
    const lease = leadership.get(options.leaseName) ?? { now: 0, most: 0 };
    leadership.set(options.leaseName, lease);
    const elector = new LeaderElector({
      kubeConfig: env.kubeConfig(),
      namespace,
      identity,
      leaseDurationSeconds: 3,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 300,
      logger,
      onStartedLeading: () => {
        calls.started++;
        lease.now++;
        lease.most = Math.max(lease.most, lease.now);
      },
      onStoppedLeading: () => {
        calls.stopped++;
        lease.now--;
      },
      ...options,
    });
    running.push(elector);
    return { elector, calls };
  }

  const readLease = (name: string): Promise<V1Lease> => leases.readNamespacedLease({ name, namespace });
  const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

  it('elects exactly one of two candidates, and a released lease passes to the other at once', async () => {
    // A long lease: a takeover within seconds can only come from the release.
    const options = { leaseName: 'two-candidates', leaseDurationSeconds: 30 };
    const a = candidate('candidate-a', options);
    const b = candidate('candidate-b', options);
    a.elector.start();
    b.elector.start();

    const leader = await eventually('a leader', () => {
      const leaders = [a, b].filter((c) => c.elector.isLeader());
      expect(leaders).toHaveLength(1);
      return leaders[0]!;
    });
    const follower = leader === a ? b : a;
    const identityOf = (c: Candidate): string => (c === a ? 'candidate-a' : 'candidate-b');
    expect(leader.calls).toEqual({ started: 1, stopped: 0 });
    expect(follower.calls).toEqual({ started: 0, stopped: 0 });

    const lease = await readLease('two-candidates');
    expect(lease.spec?.holderIdentity).toBe(identityOf(leader));
    expect(lease.spec?.leaseDurationSeconds).toBe(30);
    expect(lease.spec?.leaseTransitions).toBe(0);
    expect(String(lease.spec?.renewTime)).toMatch(MICRO_TIME);
    expect(String(lease.spec?.acquireTime)).toMatch(MICRO_TIME);
    // The leader keeps renewing: renewTime moves, the holder and acquireTime stay.
    await eventuallyPasses('a renewal', async () => {
      const renewed = await readLease('two-candidates');
      expect(renewed.spec?.holderIdentity).toBe(identityOf(leader));
      expect(String(renewed.spec?.renewTime)).not.toBe(String(lease.spec?.renewTime));
      expect(String(renewed.spec?.acquireTime)).toBe(String(lease.spec?.acquireTime));
    });
    expect(follower.elector.isLeader()).toBe(false);

    const releasedAt = Date.now();
    await leader.elector.stop();
    expect(leader.elector.isLeader()).toBe(false);
    expect(leader.calls).toEqual({ started: 1, stopped: 1 });
    await eventuallyPasses(
      'the follower to take over',
      () => expect(follower.elector.isLeader()).toBe(true),
      5_000,
    );
    expect(Date.now() - releasedAt).toBeLessThan(5_000);
    expect(follower.calls).toEqual({ started: 1, stopped: 0 });
    const taken = await readLease('two-candidates');
    expect(taken.spec?.holderIdentity).toBe(identityOf(follower));
    expect(taken.spec?.leaseTransitions).toBe(1);
    expect(taken.spec?.leaseDurationSeconds).toBe(30);
    expect(leadership.get('two-candidates')?.most).toBe(1);
  });

  it('takes over an abandoned lease once it has seen it unchanged for the lease duration', async () => {
    // The holder crashed long ago by the wall clock; but clocks of different machines are not
    // compared: a newcomer waits a full lease duration of its own time.
    await leases.createNamespacedLease({
      namespace,
      body: {
        metadata: { name: 'abandoned', namespace },
        spec: {
          holderIdentity: 'crashed-pod',
          leaseDurationSeconds: 2,
          leaseTransitions: 4,
          acquireTime: new V1MicroTime('2000-01-01T00:00:00Z'),
          renewTime: new V1MicroTime('2000-01-01T00:00:00Z'),
        },
      },
    });
    const successor = candidate('successor', { leaseName: 'abandoned' });
    const startedAt = Date.now();
    successor.elector.start();
    await eventuallyPasses(
      'the successor to lead',
      () => expect(successor.elector.isLeader()).toBe(true),
      8_000,
    );
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1_900);
    const lease = await readLease('abandoned');
    expect(lease.spec?.holderIdentity).toBe('successor');
    expect(lease.spec?.leaseTransitions).toBe(5);
    expect(lease.spec?.leaseDurationSeconds).toBe(3);
    expect(await metricValue('hostplane_controller_leader', { lease: 'abandoned' })).toBe(1);
  });

  it('a leader that stops without releasing (like a crash) is succeeded once the lease expires', async () => {
    const first = candidate('first', { leaseName: 'crash', releaseOnStop: false });
    first.elector.start();
    await eventuallyPasses('the first to lead', () => expect(first.elector.isLeader()).toBe(true));
    const second = candidate('second', { leaseName: 'crash' });
    second.elector.start();

    const stoppedAt = Date.now();
    await first.elector.stop();
    expect(first.calls).toEqual({ started: 1, stopped: 1 });
    expect((await readLease('crash')).spec?.holderIdentity).toBe('first');
    await eventuallyPasses('the second to lead', () => expect(second.elector.isLeader()).toBe(true), 8_000);
    // It last saw the lease change at most one retry period before the stop, and waits 3 s from then.
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(2_500);
    expect((await readLease('crash')).spec?.holderIdentity).toBe('second');
    expect(leadership.get('crash')?.most).toBe(1);
  });

  it('stops leading when renewals fail for longer than the renew deadline, then runs for it again', async () => {
    // A service account whose right to write Leases can be taken away and given back.
    const rbac = env.kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    const { token, roleBinding: binding } = await serviceAccountWithRole(env, namespace, 'elector', [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
    ]);

    const leader = candidate('rbac-leader', {
      leaseName: 'revocable',
      kubeConfig: env.kubeConfig(token),
      leaseDurationSeconds: 4,
      renewDeadlineMs: 1_500,
      retryPeriodMs: 300,
    });
    leader.elector.start();
    await eventuallyPasses('the leader to lead', () => expect(leader.elector.isLeader()).toBe(true));

    const revokedAt = Date.now();
    await rbac.deleteNamespacedRoleBinding({ namespace, name: binding.metadata?.name ?? '' });
    await eventuallyPasses(
      'leadership to be given up',
      () => expect(leader.elector.isLeader()).toBe(false),
      6_000,
    );
    expect(Date.now() - revokedAt).toBeGreaterThanOrEqual(1_200);
    expect(leader.calls).toEqual({ started: 1, stopped: 1 });
    expect(await metricValue('hostplane_controller_leader', { lease: 'revocable' })).toBe(0);

    // Back in candidacy: with its rights restored it takes the lease again (it is still the holder).
    await rbac.createNamespacedRoleBinding({ namespace, body: binding });
    await eventuallyPasses(
      'the leader to lead again',
      () => expect(leader.elector.isLeader()).toBe(true),
      6_000,
    );
    expect(leader.calls).toEqual({ started: 2, stopped: 1 });
  });

  it('rejects timings that would let a leader act after others took over', () => {
    const base = {
      kubeConfig: env.kubeConfig(),
      namespace,
      leaseName: 'invalid',
      identity: 'x',
      logger,
      onStartedLeading: () => undefined,
      onStoppedLeading: () => undefined,
    };
    expect(() => new LeaderElector({ ...base, leaseDurationSeconds: 2, renewDeadlineMs: 2_000 })).toThrow(
      /leaseDurationSeconds/,
    );
    expect(() => new LeaderElector({ ...base, renewDeadlineMs: 1_000, retryPeriodMs: 1_000 })).toThrow(
      /renewDeadlineMs/,
    );
  });
});
