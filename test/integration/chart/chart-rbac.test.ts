import { AuthorizationV1Api, CoordinationV1Api } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureNamespace, installChartRbac, type ChartRbac } from '../../support/kube/apply.js';
import { env, RELEASE, useChartTestEnv } from './chart-support.js';

// The chart's Roles and RoleBindings with a real kube-apiserver's authorizer: what the controller's
// and the api's ServiceAccounts may and may not do (SelfSubjectAccessReview with their tokens), the
// controller's leader election on its own Lease, and the edge bound to nothing.

useChartTestEnv();

describe('RBAC with the real authorizer', () => {
  const namespace = 'hostplane-rbac';
  const otherNamespace = 'someone-else';
  let rbac: ChartRbac;

  beforeAll(async () => {
    rbac = await installChartRbac(env, namespace);
    await ensureNamespace(env, otherNamespace);
  });

  interface Check {
    verb: string;
    resource: string;
    group?: string;
    subresource?: string;
    name?: string;
    namespace?: string;
  }
  const key = (c: Check) =>
    `${c.verb} ${c.group ? `${c.group}/` : ''}${c.resource}${c.subresource ? `/${c.subresource}` : ''}` +
    `${c.name ? ` "${c.name}"` : ''} in ${c.namespace ?? namespace}`;

  /** SelfSubjectAccessReview as the token's ServiceAccount: which checks are allowed. */
  async function allowed(token: string, checks: Check[]): Promise<Record<string, boolean>> {
    const authz = env.kubeConfig(token).makeApiClient(AuthorizationV1Api);
    const entries = await Promise.all(
      checks.map(async (c) => {
        const review = await authz.createSelfSubjectAccessReview({
          body: {
            spec: {
              resourceAttributes: {
                verb: c.verb,
                group: c.group ?? '',
                resource: c.resource,
                subresource: c.subresource,
                name: c.name,
                namespace: c.namespace ?? namespace,
              },
            },
          },
        });
        return [key(c), review.status?.allowed === true] as const;
      }),
    );
    return Object.fromEntries(entries);
  }
  const expectAll = (result: Record<string, boolean>, value: boolean) =>
    expect(result).toEqual(Object.fromEntries(Object.keys(result).map((k) => [k, value])));

  const hp = 'hostplane.dev';
  const each = (verbs: string[], c: Omit<Check, 'verb'>): Check[] => verbs.map((verb) => ({ verb, ...c }));

  it('the controller may do exactly what it needs in its namespace', async () => {
    const needed: Check[] = [
      // create: the resync gives every database site without a Site resource one.
      ...each(['list', 'watch', 'create', 'patch'], { group: hp, resource: 'sites' }),
      ...each(['update'], { group: hp, resource: 'sites', subresource: 'status' }),
      ...each(['update'], { group: hp, resource: 'sites', subresource: 'finalizers' }),
      ...each(['get', 'list', 'watch', 'create', 'patch', 'delete'], { group: hp, resource: 'forms' }),
      ...each(['update'], { group: hp, resource: 'forms', subresource: 'status' }),
      ...each(['get', 'list', 'watch', 'create', 'patch', 'delete'], {
        group: hp,
        resource: 'sqlitedatabases',
      }),
      ...each(['update'], { group: hp, resource: 'sqlitedatabases', subresource: 'status' }),
      ...each(['get', 'list', 'watch', 'create', 'patch', 'delete'], {
        group: 'networking.k8s.io',
        resource: 'ingresses',
      }),
      // API-key Secrets of adopted sites, deleted with deletionPolicy Delete; never listed.
      ...each(['get', 'create', 'delete'], { resource: 'secrets' }),
      ...each(['create'], { resource: 'events' }),
      ...each(['create'], { group: 'coordination.k8s.io', resource: 'leases' }),
      ...each(['get', 'update'], { group: 'coordination.k8s.io', resource: 'leases', name: rbac.leaseName }),
    ];
    expectAll(await allowed(rbac.controllerToken, needed), true);

    const denied: Check[] = [
      ...each(['list', 'watch', 'update', 'patch', 'deletecollection'], { resource: 'secrets' }),
      ...each(['update', 'delete', 'deletecollection'], { group: hp, resource: 'sites' }),
      ...each(['patch'], { group: hp, resource: 'sites', subresource: 'status' }),
      ...each(['update', 'deletecollection'], { group: hp, resource: 'forms' }),
      ...each(['patch'], { group: hp, resource: 'forms', subresource: 'status' }),
      ...each(['update'], { group: hp, resource: 'forms', subresource: 'finalizers' }),
      ...each(['update', 'deletecollection'], { group: hp, resource: 'sqlitedatabases' }),
      ...each(['patch'], { group: hp, resource: 'sqlitedatabases', subresource: 'status' }),
      ...each(['update'], { group: hp, resource: 'sqlitedatabases', subresource: 'finalizers' }),
      ...each(['update'], { group: 'networking.k8s.io', resource: 'ingresses' }),
      ...each(['get', 'create', 'delete'], { resource: 'pods' }),
      ...each(['get'], { resource: 'configmaps' }),
      ...each(['get', 'list'], { group: hp, resource: 'sites', namespace: otherNamespace }),
      ...each(['create'], { group: 'networking.k8s.io', resource: 'ingresses', namespace: otherNamespace }),
      ...each(['get', 'update', 'delete'], {
        group: 'coordination.k8s.io',
        resource: 'leases',
        name: 'other-lease',
      }),
      ...each(['list', 'watch'], { group: 'coordination.k8s.io', resource: 'leases' }),
      ...each(['create', 'list'], { group: 'rbac.authorization.k8s.io', resource: 'clusterroles' }),
      ...each(['create'], { group: 'rbac.authorization.k8s.io', resource: 'rolebindings' }),
      ...each(['deletecollection'], { group: 'networking.k8s.io', resource: 'ingresses' }),
    ];
    expectAll(await allowed(rbac.controllerToken, denied), false);
  });

  it("the controller's token works for leader election on its own Lease only", async () => {
    const leases = env.kubeConfig(rbac.controllerToken).makeApiClient(CoordinationV1Api);
    const holder = 'hostplane-controller-0';
    await leases.createNamespacedLease({
      namespace,
      body: {
        metadata: { name: rbac.leaseName },
        spec: { holderIdentity: holder, leaseDurationSeconds: 15 },
      },
    });
    const lease = await leases.readNamespacedLease({ name: rbac.leaseName, namespace });
    expect(lease.spec?.holderIdentity).toBe(holder);
    // (No renewTime here: client-node serializes Dates with milliseconds, MicroTime wants microseconds.)
    lease.spec = { ...lease.spec, holderIdentity: 'hostplane-controller-1', leaseTransitions: 1 };
    const renewed = await leases.replaceNamespacedLease({ name: rbac.leaseName, namespace, body: lease });
    expect(renewed.spec?.holderIdentity).toBe('hostplane-controller-1');
    await expect(leases.readNamespacedLease({ name: 'other-lease', namespace })).rejects.toMatchObject({
      code: 403,
    });
  });

  it('the api may create, find, patch and delete Sites and write Forms; the edge may do nothing', async () => {
    expectAll(
      await allowed(rbac.apiToken, [
        // patch: a custom domain attached or removed through the account API goes into the Site's
        // spec.customDomains; patch and delete: a site deleted through the account API.
        ...each(['get', 'list', 'create', 'patch', 'delete'], { group: hp, resource: 'sites' }),
        ...each(['get', 'list', 'create', 'patch', 'delete'], { group: hp, resource: 'forms' }),
        ...each(['get', 'list', 'create'], { group: hp, resource: 'sqlitedatabases' }),
      ]),
      true,
    );
    expectAll(
      await allowed(rbac.apiToken, [
        ...each(['update', 'watch'], { group: hp, resource: 'sites' }),
        ...each(['update'], { group: hp, resource: 'sites', subresource: 'status' }),
        ...each(['update', 'watch'], { group: hp, resource: 'forms' }),
        ...each(['update'], { group: hp, resource: 'forms', subresource: 'status' }),
        ...each(['patch', 'update', 'delete', 'watch'], { group: hp, resource: 'sqlitedatabases' }),
        ...each(['get', 'create'], { resource: 'secrets' }),
        ...each(['create'], { group: 'networking.k8s.io', resource: 'ingresses' }),
        ...each(['create'], { group: hp, resource: 'sites', namespace: otherNamespace }),
        ...each(['get'], { group: hp, resource: 'forms', namespace: otherNamespace }),
      ]),
      false,
    );

    // The edge's ServiceAccount has no binding: a SubjectAccessReview (as admin) says no to everything.
    const authz = env.kubeConfig().makeApiClient(AuthorizationV1Api);
    const edgeUser = `system:serviceaccount:${namespace}:${RELEASE}-edge`;
    for (const check of [
      { verb: 'get', group: hp, resource: 'sites' },
      { verb: 'get', group: '', resource: 'secrets' },
      { verb: 'list', group: 'networking.k8s.io', resource: 'ingresses' },
    ]) {
      const review = await authz.createSubjectAccessReview({
        body: {
          spec: {
            user: edgeUser,
            groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
            resourceAttributes: { ...check, namespace },
          },
        },
      });
      expect(review.status?.allowed, `${edgeUser} ${check.verb} ${check.resource}`).toBe(false);
    }
  });
});
