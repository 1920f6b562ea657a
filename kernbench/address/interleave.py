"""The channel interleave of a PE's HBM under 1:1 mapping (DESIGN §4).

Byte ``o`` of an interleaved space lives on channel ``(o // g) % n`` at channel
offset ``(o // (g*n)) * g + o % g``. The bytes of any range on one channel are
contiguous in that channel's space, so an access becomes one request per touched
channel, computed in closed form: O(channels), never O(granules). An access of whole
stripes from a stripe boundary (the usual one) is simpler still: every channel holds
``nbytes / n`` of it, and channel ``c``'s first byte is at interleaved offset
``offset + c * g``.
"""

from __future__ import annotations


def split(offset: int, nbytes: int, granule: int, n_channels: int) -> list[tuple[int, int, int]]:
    """Per-channel pieces ``(channel, channel_offset, nbytes)`` of ``[offset, offset+nbytes)``.

    Pieces are in channel order, carry exactly the accessed bytes and never overlap.
    Each end is the channel offset of that end (the bytes of ``[0, end)`` on the
    channel) in closed form, the divisions done once for all channels: in the end's
    stripe, channels before ``k`` hold a whole granule below it, channel ``k`` holds
    ``m`` bytes, later channels none.
    """
    stripe = granule * n_channels
    q_lo, r_lo = divmod(offset, stripe)
    q_hi, r_hi = divmod(offset + nbytes, stripe)
    k_lo, m_lo = divmod(r_lo, granule)
    k_hi, m_hi = divmod(r_hi, granule)
    base_lo, base_hi = q_lo * granule, q_hi * granule
    pieces = []
    for ch in range(n_channels):
        lo = base_lo + (granule if ch < k_lo else m_lo if ch == k_lo else 0)
        hi = base_hi + (granule if ch < k_hi else m_hi if ch == k_hi else 0)
        if hi > lo:
            pieces.append((ch, lo, hi - lo))
    return pieces


def whole_stripes(offset: int, nbytes: int, granule: int, n_channels: int) -> bool:
    """Whether ``[offset, offset+nbytes)`` is whole stripes from a stripe boundary."""
    stripe = granule * n_channels
    return not (offset % stripe or nbytes % stripe)
