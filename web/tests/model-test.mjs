// Unit test of the UI's per-GPU-product grouping (web/src/model.js,
// byGpuProduct): flavors of the same product and resource are summed, unlike
// products, resources and flavors of unknown product never are.
// Run: node web/tests/model-test.mjs (CTest observability_web_model).
import assert from 'node:assert/strict';
import { byGpuProduct } from '../src/model.js';

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
console.log('model-test: ok');
