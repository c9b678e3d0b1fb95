# Run: .venv/bin/python dev/half_decision_sim.py. Estimates how often a half-precision
# approximate 4/6 decision would be undecided (needs the exact fallback): per block and per
# warp of 32 blocks. float64 stands in for the exact errors.
import numpy as np
rng = np.random.default_rng(0)
E4 = np.array(sorted({m*2.0**(e-7) if e==0 else (1+m/8)*2.0**(e-7) for e in range(16) for m in range(8)} - {1.75*2**8}))
E4 = E4[E4<=448]
def e4m3(v):  # nearest (ties irrelevant here)
    i = np.searchsorted(E4, v); i = np.clip(i,1,len(E4)-1)
    lo, hi = E4[i-1], E4[i]
    return np.where(v-lo <= hi-v, lo, hi)
G = np.array([0,.5,1,1.5,2,3,4,6])
def grid(v):
    i = np.abs(v[...,None]-G).argmin(-1); return G[i]
def run(x, bound=256.0):
    A = np.abs(x).max(); senc = bound*6/A; sdec = 1/senc
    b = x.reshape(-1,16); ba = np.abs(b).max(1)
    base = ba/6*senc
    res = []
    for s in (e4m3(np.minimum(base,448)), e4m3(np.minimum(base*1.5,448))):
        inv = 1/(s*sdec); K = s*A/(6*bound)
        v = np.abs(b)*inv[:,None]
        d = np.abs(grid(v)-v)
        e = K*d.sum(1)
        B = K*(3*2.0**-11*v.sum(1) + 4*2.0**-11*d.sum(1))  # v error + fp16 tree sum error
        res.append((e,B))
    (e6,B6),(e4,B4) = res
    und = np.abs(e4-e6) <= B4+B6
    w = und[:len(und)//32*32].reshape(-1,32).any(1)
    return und.mean(), w.mean(), (e4<e6).mean()
for name, x in [("gaussian", rng.standard_normal(1<<20)), ("student-t3", rng.standard_t(3,1<<20)),
                ("uniform", rng.uniform(-2,2,1<<20))]:
    x = x.astype(np.float32)
    print(name, "undecided blocks %.4f, warps with one %.3f, map-to-4 %.2f" % run(x))
