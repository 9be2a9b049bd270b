// Unit test of the UI's per-GPU-product grouping (web/src/model.js,
// byGpuProduct): flavors of the same product and resource are summed, unlike
// products, resources and flavors of unknown product never are.
// Run: node web/tests/model-test.mjs (CTest observability_web_model).
import assert from 'node:assert/strict';
import { byGpuProduct, sumSeries } from '../src/model.js';

const GPU = 'nvidia.com/gpu';
const MIG = 'nvidia.com/mig-1g.10gb';
const f = (flavor, resource, nominal, usage, borrowed = 0, lent = 0) => ({ flavor, resource, nominal, usage, borrowed, lent });
const owners = [
  { name: 'nlp', flavors: [f('h100-spot', GPU, 2, 3, 1), f('h100-ondemand', GPU, 4, 1, 0, 1), f('a100', GPU, 8, 8), f('a100', MIG, 14, 5), f('mystery', GPU, 9, 9)] },
  { name: 'vision', flavors: [f('h100-spot', GPU, 1, 0)] },
];
const products = { 'h100-spot': 'NVIDIA-H100-80GB-HBM3', 'h100-ondemand': 'NVIDIA-H100-80GB-HBM3', a100: 'NVIDIA-A100-SXM4-80GB' };
const rows = byGpuProduct(owners, products);
const pick = (owner, label) => rows.find((r) => r.owner === owner && r.label === label);

const h100 = pick('nlp', 'NVIDIA-H100-80GB-HBM3');
assert.deepEqual([h100.nominal, h100.usage, h100.borrowed, h100.lent], [6, 4, 1, 1]);
assert.deepEqual(h100.flavors, ['h100-spot', 'h100-ondemand']);
assert.equal(pick('nlp', 'NVIDIA-A100-SXM4-80GB').nominal, 8);               // whole GPUs alone
assert.equal(pick('nlp', 'NVIDIA-A100-SXM4-80GB/mig-1g.10gb').nominal, 14);  // MIG instances apart
assert.equal(pick('vision', 'NVIDIA-H100-80GB-HBM3').nominal, 1);             // per owner
assert.equal(rows.length, 4, JSON.stringify(rows));                          // 'mystery' left out
assert.equal(byGpuProduct(owners, {}).length, 0);
// Per-product charts: series of the product's flavors summed over time.
const a = { t: [10, 20, 30], nominal: [2, 2, 2], used: [1, 2, 3], borrowed: [0, 0, 1], lent: [0, 0, 0] };
const b = { t: [20, 30, 40], nominal: [4, 4, 4], used: [4, 0, 1], borrowed: [1, 0, 0], lent: [1, 1, 1] };
const sum = sumSeries([a, b]);
assert.deepEqual(sum.t, [10, 20, 30, 40]);
assert.deepEqual(sum.nominal, [2, 6, 6, 6]);   // b counts from its first sample; a holds 2 at 40
assert.deepEqual(sum.used, [1, 6, 3, 4]);
assert.deepEqual(sum.borrowed, [0, 1, 1, 1]);
assert.deepEqual(sum.lent, [0, 1, 1, 1]);
assert.deepEqual(sumSeries([]).t, []);
console.log('model-test: ok');
