"""The shipped ``@triton.jit`` kernels: ordinary Triton, nothing KernBench-specific.

``vector_add``, ``softmax`` and ``matmul`` follow Triton's tutorials (01, 02, 03);
``layer_norm`` is the tutorial's forward pass (05) without the saved statistics;
``decode_attention`` is a grouped-query decode step in the spirit of the GQA
workloads: one program per KV head, its group's query heads as the rows, an online
softmax over KV tiles of ``BLOCK_N`` tokens with S = Q·Kᵀ and acc += P·V as dots.

The rest are what a Llama-style decoder layer needs beside those
(:mod:`kernbench.triton.decoder`): ``rms_norm``, ``rotary`` (rotate-half form, as
Llama's), ``kv_append`` (a token's heads into a KV cache), ``silu_mul`` (SiLU(gate)·up)
and ``residual_add`` (the residual stream, in place). Each computes in fp32 and stores
in its output's dtype, as such kernels do for fp16 models.
The tutorial kernels' inputs and torch references are in :mod:`kernbench.triton.cases`;
the layer's kernels are checked against torch in tests/test_triton_decoder_kernels.py.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def vector_add(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def softmax(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)


@triton.jit
def matmul(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@triton.jit
def layer_norm(X, Y, W, B, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    y = xc * rstd * w + b
    tl.store(Y + row * stride + cols, y, mask=mask)


@triton.jit
def decode_attention(
    Q,
    K,
    V,
    Out,
    seq_len,
    scale,
    GROUP: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    kvh = tl.program_id(0)
    rows = kvh * GROUP + tl.arange(0, GROUP)
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + rows[:, None] * HEAD_DIM + d[None, :])
    m_i = tl.full((GROUP,), float("-inf"), tl.float32)
    l_i = tl.zeros((GROUP,), tl.float32)
    acc = tl.zeros((GROUP, HEAD_DIM), tl.float32)
    kv_base = kvh * seq_len * HEAD_DIM
    for start in range(0, seq_len, BLOCK_N):
        n = start + tl.arange(0, BLOCK_N)
        valid = n < seq_len
        kv_off = kv_base + n[:, None] * HEAD_DIM + d[None, :]
        k = tl.load(K + kv_off, mask=valid[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        s = tl.where(valid[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(V + kv_off, mask=valid[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(Out + rows[:, None] * HEAD_DIM + d[None, :], acc / l_i[:, None])


@triton.jit
def rms_norm(X, W, Y, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    # y = x / sqrt(mean(x^2) + eps) * w, one program per row: layer_norm without the
    # mean and the bias (Llama's RMSNorm).
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask)
    tl.store(Y + row * stride + cols, x * rstd * w, mask=mask)


@triton.jit
def head_block(
    X,
    Out,
    x_offset,
    x_token_stride,
    x_head_stride,
    out_offset,
    out_token_stride,
    out_head_stride,
    n_heads,
    width,
    BLOCK_H: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # The indexing of a per-head kernel (rotary, kv_append), program (token, block of
    # BLOCK_H heads): a head's element offsets i (BLOCK of them, the first ``width``
    # real), the mask of real heads and elements, and where element i of each head is
    # read in X (heads x_head_stride apart from x_offset in the token's row) and
    # written in Out (out_head_stride apart from out_offset: a KV cache's slots).
    tok = tl.program_id(0)
    heads = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    i = tl.arange(0, BLOCK)
    mask = (heads[:, None] < n_heads) & (i[None, :] < width)
    src = X + x_offset + tok * x_token_stride + heads[:, None] * x_head_stride + i[None, :]
    dst = Out + out_offset + tok * out_token_stride + heads[:, None] * out_head_stride
    return tok, i, mask, src, dst + i[None, :]


@triton.jit
def rotary(
    X,
    Out,
    Cos,
    Sin,
    x_offset,
    x_token_stride,
    out_offset,
    out_token_stride,
    out_head_stride,
    n_heads,
    HALF,
    BLOCK_H: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Rotary position embedding, rotate-half form: a head of 2 x HALF elements becomes
    # (x1 cos - x2 sin, x2 cos + x1 sin) with x1, x2 its halves and cos, sin the token's
    # tables (HALF each). Heads are read contiguous from X at x_offset and written at
    # out_head_stride from out_offset, so K can go straight into its slot of a KV cache.
    tok, i, mask, src, dst = head_block(
        X, Out, x_offset, x_token_stride, 2 * HALF, out_offset, out_token_stride,
        out_head_stride, n_heads, HALF, BLOCK_H, BLOCK,
    )  # fmt: skip
    in_half = i < HALF
    x1 = tl.load(src, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(src + HALF, mask=mask, other=0.0).to(tl.float32)
    c = tl.load(Cos + tok * HALF + i, mask=in_half, other=0.0)[None, :]
    s = tl.load(Sin + tok * HALF + i, mask=in_half, other=0.0)[None, :]
    tl.store(dst, x1 * c - x2 * s, mask=mask)
    tl.store(dst + HALF, x2 * c + x1 * s, mask=mask)


@triton.jit
def kv_append(
    X,
    Cache,
    x_offset,
    x_token_stride,
    cache_offset,
    cache_token_stride,
    cache_head_stride,
    n_heads,
    HEAD_DIM,
    BLOCK_H: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Copy a token's n_heads heads (contiguous in X from x_offset) into their slots of
    # a KV cache (cache_head_stride apart from cache_offset): the V half of a decode
    # step's cache update (rotary writes K).
    _, _, mask, src, dst = head_block(
        X, Cache, x_offset, x_token_stride, HEAD_DIM, cache_offset, cache_token_stride,
        cache_head_stride, n_heads, HEAD_DIM, BLOCK_H, BLOCK,
    )  # fmt: skip
    tl.store(dst, tl.load(src, mask=mask), mask=mask)


@triton.jit
def silu_mul(Gate, Up, Out, n_elements, BLOCK_SIZE: tl.constexpr):
    # out = SiLU(gate) * up = gate / (1 + exp(-gate)) * up: the gated MLP's middle.
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    g = tl.load(Gate + offsets, mask=mask).to(tl.float32)
    u = tl.load(Up + offsets, mask=mask).to(tl.float32)
    tl.store(Out + offsets, g / (1.0 + tl.exp(-g)) * u, mask=mask)


@triton.jit
def residual_add(X, Y, n_elements, BLOCK_SIZE: tl.constexpr):
    # X += Y in place: the residual stream takes a sublayer's output (vector_add writing
    # over its first input, summed in fp32).
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(X + offsets, mask=mask).to(tl.float32)
    y = tl.load(Y + offsets, mask=mask).to(tl.float32)
    tl.store(X + offsets, x + y, mask=mask)
