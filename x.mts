import { z } from 'zod';
const int = z.number().int().min(1).max(100);
const q = z.string().regex(/^\d{1,15}$/, 'must be a whole number').transform(Number).pipe(int).optional().transform((v) => v ?? 100)
  .meta({ type: 'integer', minimum: 1, maximum: 100, default: 100 });
console.log(JSON.stringify(z.toJSONSchema(z.object({ per_page: q }), { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' })));
console.log(JSON.stringify(z.toJSONSchema(int)));
const q2 = z.string().regex(/^\d{1,15}$/).transform(Number).pipe(int).optional().default('100' as any);
console.log(JSON.stringify(z.toJSONSchema(z.object({ per_page: q2 }), { io: 'input', unrepresentable: 'any' })));
