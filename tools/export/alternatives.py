#!/usr/bin/env python3
"""What XLA (through JAX) and PyTorch report about the memory of the example steps.

For the training steps the examples were exported from (export_jax.py,
export_torch.py), this records each framework's own account of peak memory
and flops, without and with activation checkpointing, so that benchmark
tables can put them beside remat-opt's numbers. Three policies:

  none              the step as exported, no checkpointing;
  nothing_saveable  checkpoint around each layer/block, saving only its inputs
                    (jax.checkpoint_policies.nothing_saveable; in PyTorch,
                    torch.utils.checkpoint.checkpoint, which saves the same);
  dots_saveable     the same checkpoints, also saving the results of matmuls
                    and convolutions (jax.checkpoint_policies.dots_saveable;
                    in PyTorch, a selective-checkpoint context that must save
                    aten.addmm, the op F.linear runs).

XLA rows (jax venv): the step is jitted on the examples' shapes, compiled for
the CPU, and read back through compiled.memory_analysis() and
compiled.cost_analysis(); memory_analysis holds every field XLA gives.
remat-opt's peak excludes the arguments and keeps the outputs, so peak_bytes
is output_size + temp_size - alias_size: what the step allocates besides its
arguments (XLA packs all temporaries into one buffer of temp_size, sized by
its heap simulator). peak_memory_in_bytes would be the natural field, but on
the CPU it holds no temporaries (see xla_row).

PyTorch rows (torch venv, --torch): one eager training step of torch_mlp on
the CPU under torch.profiler with profile_memory=True; peak_bytes is the
largest running sum of the CPU allocator's allocation/free events during the
step. Parameters and inputs exist before the profiler starts, so they are
excluded as in remat-opt's model; the outputs are held to the end. flops come
from torch.utils.flop_counter.FlopCounterMode, which counts matmuls only.

recompute_overhead = flops(policy) / flops(none) - 1, per framework and model.

Usage (normally through tools/export/alternatives.sh):
  python alternatives.py --torch --out ROWS.json               # torch venv
  python alternatives.py --out OUT.json [--torch-rows ROWS.json]  # jax venv
"""

import argparse
import functools
import json
import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

POLICIES = ("none", "nothing_saveable", "dots_saveable")
# Policies a model is also measured with: the one scanned LMs use in practice (MaxText's
# default), which saves the weight matmuls and recomputes the attention's batched ones.
EXTRA_POLICIES = {"transformer_scan": ("dots_with_no_batch_dims_saveable",)}
JAX_MODELS = ("mlp", "rnn_scan", "transformer", "resnet", "transformer12", "transformer_scan",
              "cnn_pool", "attention_causal", "lm_dropout")
# XLA's cost analysis counts a while loop's body once, not once per trip.
LOOP_MODELS = ("rnn_scan",)
LOOP_FLOPS = " (counts each lax.scan while-loop body once, not per time step)"
# Models whose flops are taken from the same step with its scans unrolled (lax.scan's
# unroll=True: the same arithmetic, so the cost analysis counts every layer), while their
# memory is the scanned step's own.
UNROLLED_FLOP_MODELS = ("transformer_scan", "lm_dropout")
UNROLLED_FLOPS = (" of the same step with lax.scan(unroll=True) (the scanned step's analysis counts "
                  "the loop body once)")
LOSS_RTOL = 1e-6  # a checkpointed step must give the exported step's loss
SEED = 0  # of the inputs the loss check draws (as check_examples.py / compare_torch.py do)


def overhead(rows):
    """Fill recompute_overhead from the flops of each model's `none` row."""
    base = {r["model"]: r["flops"] for r in rows if r["policy"] == "none"}
    for r in rows:
        r["recompute_overhead"] = r["flops"] / base[r["model"]] - 1


# ---------------------------------------------------------------- XLA (JAX)


def jax_forwards(E, remat):
    """{model: (forward, where)}: export_jax's forwards with `remat` around each layer.

    export_jax.py writes its loops inline, so each forward is written out
    again here with the identical math, the layer/block body pulled into a
    function that `remat` (a jax.checkpoint with a policy) wraps. `where`
    says where the checkpoints are, for the rows' `how`.
    """
    import jax
    import jax.numpy as jnp
    from jax import lax

    def mlp_layer(w, b, h, last):
        h = h @ w + b
        return h if last else jax.nn.relu(h)

    mlp_layer = remat(mlp_layer, static_argnums=(3,))

    def mlp(params, x):
        h = x
        for i, (w, b) in enumerate(params):
            h = mlp_layer(w, b, h, i + 1 == len(params))
        return h

    def rnn(params, xs):
        p = params["rnn"]

        @remat
        def cell(h, x):
            return jnp.tanh(x @ p["wx"] + h @ p["wh"] + p["b"]), None

        h, _ = lax.scan(cell, jnp.zeros((xs.shape[1], E.RNN_H), E.F32), xs)
        w, b = params["head"]
        return h @ w + b

    @remat
    def tf_block(blk, h):
        h = h + E.attention(blk["attn"], E.layernorm(h, *blk["ln1"]))
        m = E.layernorm(h, *blk["ln2"])
        m = jax.nn.gelu(m @ blk["w1"] + blk["b1"], approximate=True)
        return h + (m @ blk["w2"] + blk["b2"])

    def transformer(params, tokens):
        h = jnp.take(params["embed"], tokens, axis=0) + params["pos"]
        for blk in params["blocks"]:
            h = tf_block(blk, h)
        h = E.layernorm(h, *params["ln_f"])
        w, b = params["head"]
        return h @ w + b

    res_block = remat(E.basic_block, static_argnums=(2,))

    def resnet(params, x):
        stem = params["stem"]
        h = jax.nn.relu(E.batchnorm(E.conv(x, stem["conv"]), *stem["bn"]))
        h = E.max_pool(h)
        for si, stage in enumerate(params["stages"]):
            for bi, blk in enumerate(stage):
                h = res_block(blk, h, 2 if si > 0 and bi == 0 else 1)
        pooled = jnp.mean(h, axis=(1, 2))
        w, b = params["head"]
        return pooled @ w + b

    def scan_block(h, blk):
        return E.transformer_scan_block(h, blk), None

    def transformer_scan(params, tokens, unroll=False):
        h = jnp.take(params["embed"], tokens, axis=0) + params["pos"]
        h, _ = lax.scan(remat(scan_block), h, params["blocks"], unroll=unroll)
        h = E.layernorm(h, *params["ln_f"])
        w, b = params["head"]
        return h @ w + b

    n_mlp = len(E.MLP_DIMS) - 1
    blocks = "pre-LN block (h + attention(ln1(h)), then h + mlp(ln2(h)))"
    return {
        "mlp": (mlp, f"around each of the {n_mlp} layers (dense + relu; the last, dense only)"),
        "rnn_scan": (rnn, "around the lax.scan body (one RNN cell step); the dense head outside"),
        "transformer": (transformer, f"around each of the {E.TF_BLOCKS} {blocks}; embedding, "
                                     "final layernorm and head outside"),
        "transformer12": (transformer, f"around each of the 12 {blocks}; embedding, final "
                                       "layernorm and head outside"),
        "transformer_scan": (transformer_scan, f"around the lax.scan body, the {blocks} that the scan "
                                               f"runs for each of the {E.TFS_BLOCKS} layers; embedding, "
                                               "final layernorm and head outside"),
        "resnet": (resnet, f"around each of the {len(E.RES_WIDTHS) * E.RES_BLOCKS} BasicBlocks "
                           "(export_jax.basic_block); stem, max pool and head outside"),
        # export_jax's own forwards, which take the checkpoint as an argument.
        "cnn_pool": (functools.partial(E.cnn_pool_forward, remat=remat),
                     "around each of the 2 stages (conv + BatchNorm + relu + pool); the head outside"),
        "attention_causal": (functools.partial(E.attention_causal_forward, remat=remat),
                             "around the attention block (layernorm, causal attention, residual); "
                             "embedding and head outside"),
        "lm_dropout": (functools.partial(E.lm_dropout_forward, remat=remat),
                       f"around the lax.scan body, the {blocks} with dropout that the scan runs for "
                       f"each of the {E.LMD_BLOCKS} layers; embedding, final layernorm and head outside"),
    }


def jax_steps(name):
    """The exported step of JAX model `name`, its argument specs, and the step under each
    policy measured for it: {policy: (step, how it is checkpointed)}, `none` first."""
    import jax

    import export_jax as E

    m = E.MODELS[name]
    step, specs = E.build_step(name)
    steps = {"none": (step, "the step as exported (export_jax.build_step), no jax.checkpoint")}
    for pname in POLICIES[1:] + EXTRA_POLICIES.get(name, ()):
        # Bound now: rnn_scan applies it when its forward is traced.
        remat = functools.partial(jax.checkpoint, policy=getattr(jax.checkpoint_policies, pname))
        forward, where = jax_forwards(E, remat)[name]
        steps[pname] = (E.make_step(forward, m.loss),
                        f"jax.checkpoint(policy=jax.checkpoint_policies.{pname}) {where}")
    return step, specs, steps


def xla_rows():
    import jax
    import jax.numpy as jnp
    import numpy as np

    import check_examples as C
    import export_jax as E

    rows = []
    for name in JAX_MODELS:
        policies = {p: getattr(jax.checkpoint_policies, p) for p in POLICIES[1:] + EXTRA_POLICIES.get(name, ())}
        m = E.MODELS[name]
        step, specs, steps = jax_steps(name)
        vals = C.inputs(specs, np.random.default_rng(SEED))
        args = jax.tree_util.tree_unflatten(
            jax.tree_util.tree_structure(specs), [jnp.asarray(v) for v in vals])
        ref_loss, ref_new = jax.jit(step)(*args)

        for pname, (fn, where) in steps.items():
            if pname != "none":
                loss, new = jax.jit(fn)(*args)
                rel = abs(float(loss) - float(ref_loss)) / abs(float(ref_loss))
                leaves = jax.tree_util.tree_leaves
                dparam = max(float(jnp.max(jnp.abs(a - b)))
                             for a, b in zip(leaves(new), leaves(ref_new)))
                print(f"{name} {pname}: loss {float(loss):.8g} vs exported {float(ref_loss):.8g} "
                      f"(rel {rel:.1e}), max |new param diff| {dparam:.1e}", file=sys.stderr)
                if not rel <= LOSS_RTOL:
                    raise SystemExit(f"{name} {pname}: the checkpointed forward's loss differs")
            flops = None
            if name in UNROLLED_FLOP_MODELS:
                remat = (lambda f, **_: f) if pname == "none" else functools.partial(jax.checkpoint,
                                                                                      policy=policies[pname])
                forward = functools.partial(jax_forwards(E, remat)[name][0], unroll=True)
                unrolled = jax.jit(E.make_step(forward, m.loss))
                loss, _ = unrolled(*args)
                if not abs(float(loss) - float(ref_loss)) <= LOSS_RTOL * abs(float(ref_loss)):
                    raise SystemExit(f"{name} {pname}: the unrolled step's loss differs")
                flops = float(unrolled.lower(*specs).compile().cost_analysis()["flops"])
            rows.append(xla_row(name, pname, jax.jit(fn).lower(*specs).compile(), where, flops))
    overhead(rows)
    return rows


def xla_row(name, policy, compiled, where, flops=None):
    """The row of one compiled step; `flops`, when given, replaces its cost analysis's."""
    mem = compiled.memory_analysis()
    fields = {k: getattr(mem, k) for k in dir(mem)
              if not k.startswith("_") and isinstance(getattr(mem, k), int)}
    arg, out = mem.argument_size_in_bytes, mem.output_size_in_bytes
    temp, alias = mem.temp_size_in_bytes, mem.alias_size_in_bytes
    # XLA's peak_memory_in_bytes is the allocations live for the whole program
    # (parameters, constants, outputs: indefinite_allocations) plus the heap
    # simulator's peak of the temporaries, taken from the buffer assignment's
    # heap-simulator trace. The CPU backend keeps no such trace, so there the
    # field equals indefinite_allocations and holds no temporaries at all; the
    # temporaries are one buffer of temp_size_in_bytes, the heap simulator's
    # packing of them. So the peak beside the arguments is what the step
    # allocates besides them: its outputs (less those aliased to arguments)
    # and that buffer.
    if mem.peak_memory_in_bytes != mem.indefinite_allocations:
        raise SystemExit(f"{name} {policy}: peak_memory_in_bytes ({mem.peak_memory_in_bytes}) "
                         f"now counts temporaries (indefinite_allocations "
                         f"{mem.indefinite_allocations}): use it minus the arguments")
    peak = out + temp - alias
    return {
        "framework": "XLA", "model": name, "policy": policy,
        "peak_bytes": peak, "argument_bytes": arg, "output_bytes": out,
        "temp_bytes": temp, "alias_bytes": alias,
        "flops": float(compiled.cost_analysis()["flops"]) if flops is None else flops,
        "how": (f"{where}; jax.jit(step).lower(shapes).compile() on CPU, no donated arguments "
                "(export_jax.py donates none); flops: compiled.cost_analysis()"
                f"{LOOP_FLOPS if name in LOOP_MODELS else ''}"
                f"{UNROLLED_FLOPS if name in UNROLLED_FLOP_MODELS else ''}; peak_bytes = output_size + "
                "temp_size - alias_size (peak_memory_in_bytes on CPU = indefinite_allocations: "
                "parameters + outputs + constants, no temporaries)"),
        "memory_analysis": fields,
    }


# ---------------------------------------------------------------- PyTorch


def torch_rows():
    import torch
    import torch.nn.functional as F
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts
    from torch.utils.flop_counter import FlopCounterMode

    import compare_torch
    import export_torch as T

    def layer(w, b, h, last):  # export_torch.forward's loop body
        h = F.linear(h, w, b)
        return h if last else F.relu(h)

    save_dots = functools.partial(create_selective_checkpoint_contexts,
                                  [torch.ops.aten.addmm.default])
    wrappers = {
        "none": (layer, "no checkpointing"),
        "nothing_saveable": (lambda *a: checkpoint(layer, *a, use_reentrant=False),
                             "torch.utils.checkpoint.checkpoint(layer, ..., use_reentrant=False) "
                             "around each of the 3 layers (F.linear + relu; the last, F.linear "
                             "only)"),
        "dots_saveable": (lambda *a: checkpoint(layer, *a, use_reentrant=False,
                                                context_fn=save_dots),
                          "torch.utils.checkpoint.checkpoint(layer, ..., use_reentrant=False, "
                          "context_fn=create_selective_checkpoint_contexts([aten.addmm])) around "
                          "each of the 3 layers (F.linear + relu; the last, F.linear only)"),
    }

    # export_torch.step differentiates with torch.func.grad_and_value, which
    # rejects torch.utils.checkpoint ("don't yet support saved tensor hooks");
    # so every policy runs the step a user would write, plain autograd, with
    # the same math (checked against export_torch.step below).
    def make_step(wrap):
        def step(params, x, labels):
            h, n = x, len(params) // 2
            for i in range(n):
                h = wrap(params[2 * i], params[2 * i + 1], h, i + 1 == n)
            loss = F.cross_entropy(h, labels)
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                new = [p - T.LR * g for p, g in zip(params, grads)]
            return loss.detach(), new
        return step

    vals = [torch.from_numpy(v) for v in compare_torch.inputs(SEED)]
    ref = T.step(*vals)
    params = [v.clone().requires_grad_() for v in vals[:len(T.PARAM_NAMES)]]
    x, labels = vals[len(T.PARAM_NAMES):]
    arg_bytes = sum(v.nbytes for v in vals)

    rows = []
    for policy, (wrap, where) in wrappers.items():
        step = make_step(wrap)
        loss, new = step(params, x, labels)  # also warms up one-time allocations
        rel = abs(loss.item() - ref[0].item()) / abs(ref[0].item())
        dparam = max((a - b).abs().max().item() for a, b in zip(new, ref[1:]))
        print(f"torch_mlp {policy}: loss {loss.item():.8g} vs export_torch.step "
              f"{ref[0].item():.8g} (rel {rel:.1e}), max |new param diff| {dparam:.1e}",
              file=sys.stderr)
        if not rel <= LOSS_RTOL:
            raise SystemExit(f"torch_mlp {policy}: the step's loss differs from export_torch.step")
        del loss, new  # freed inside the profiler, they would be frees of unknown size

        with profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                     record_shapes=False) as prof:
            loss, new = step(params, x, labels)
        # The op-level view (prof.events()) folds allocations into the ops that
        # made them; the raw timeline of allocator events is in kineto_results.
        events = sorted((e for e in prof.profiler.kineto_results.events()
                         if e.name() == "[memory]" and e.device_type() == DeviceType.CPU),
                        key=lambda e: e.start_ns())
        live = peak = 0
        for e in events:
            live += e.nbytes()
            peak = max(peak, live)

        with FlopCounterMode(display=False) as counter:
            step(params, x, labels)

        rows.append({
            "framework": "PyTorch", "model": T.NAME, "policy": policy,
            "peak_bytes": peak, "argument_bytes": arg_bytes,
            "output_bytes": loss.nbytes + sum(t.nbytes for t in new),
            "temp_bytes": None, "alias_bytes": None,
            "flops": float(counter.get_total_flops()),
            "how": (f"{where}; one eager step (autograd.grad + SGD lr {T.LR}) on CPU after a "
                    "warm-up step; peak_bytes = max running sum of the CPU allocator events "
                    "torch.profiler records (profile_memory=True) during the step, parameters "
                    "and inputs allocated before it, outputs held to its end; flops: "
                    "FlopCounterMode (matmuls only)"),
            "memory_analysis": None,
        })
    overhead(rows)
    return rows


# ---------------------------------------------------------------- main


def write_json(path, doc):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--torch", action="store_true",
                    help="measure torch_mlp (torch venv) and write its rows to --out")
    ap.add_argument("--out", required=True)
    ap.add_argument("--torch-rows", help="rows written by a --torch run, merged into --out")
    args = ap.parse_args(argv)

    if args.torch:
        import torch

        write_json(args.out, {"torch": torch.__version__, "rows": torch_rows()})
        return 0

    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jaxlib

    rows, torch_version = xla_rows(), None
    if args.torch_rows:
        with open(args.torch_rows) as f:
            part = json.load(f)
        rows, torch_version = rows + part["rows"], part["torch"]
    rows.sort(key=lambda r: (r["framework"], r["model"], r["policy"]))
    write_json(args.out, {
        "generated_by": "tools/export/alternatives.sh",
        "versions": {"python": platform.python_version(), "jax": jax.__version__,
                     "jaxlib": jaxlib.__version__, "torch": torch_version},
        "platform": jax.default_backend(),
        "rows": rows,
    })
    return 0


if __name__ == "__main__":
    sys.exit(main())
