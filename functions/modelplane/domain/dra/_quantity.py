"""The CEL ``kubernetes.Quantity`` value: a pointer to a Quantity that Kubernetes' library
mutates.

The quantity itself is :class:`modelplane.domain.quantity.Quantity` (parsing, exact
comparison, ``AsInt64``, ``Add``, ``Sub``, all as apimachinery does them). What this
module adds is the pointer's behaviour: ``compareTo``/``isGreaterThan``/``isLessThan``
turn their receiver into the ``inf.Dec`` form when either side has it
(``Quantity.AsDec`` converts in place, after which ``isInteger`` is false), and
``add``/``sub`` copy the receiver by value, so a receiver in the ``inf.Dec`` form shares
its ``inf.Dec`` with the result, and the addition changes both.
"""

from __future__ import annotations

from modelplane.domain import quantity as qty


class _Dec:
    """An ``*inf.Dec``: a quantity's value in that form, shared by the copies of a Quantity."""

    __slots__ = ("value",)

    def __init__(self, value: qty.Quantity) -> None:
        self.value = value


class QuantityValue:
    """A CEL ``kubernetes.Quantity``: cel-go holds a pointer to an apimachinery Quantity.

    Identity matters (see the module documentation): every reference to one CEL value is
    the same object, and a value in the ``inf.Dec`` form holds a :class:`_Dec` that the
    results of its ``add``/``sub`` share. ``boxed`` marks those results, which cel-go
    holds by pointer: Kubernetes' equality only accepts the unboxed form on the
    right-hand side, and we keep that quirk.
    """

    __slots__ = ("_dec", "_small", "boxed")

    def __init__(self, quantity: qty.Quantity, boxed: bool = False) -> None:
        self._small: qty.Quantity | None = quantity if quantity.small else None
        self._dec: _Dec | None = None if quantity.small else _Dec(quantity)
        self.boxed = boxed

    @property
    def quantity(self) -> qty.Quantity:
        """The current value, in its current form."""
        if self._dec is not None:
            return self._dec.value
        assert self._small is not None
        return self._small

    def _as_dec(self) -> _Dec:
        """``Quantity.AsDec``/``ToDec``: switch to the ``inf.Dec`` form, in place."""
        if self._dec is None:
            small = self.quantity
            self._dec = _Dec(qty.Quantity(small.unscaled, small.scale, False, small.format))
            self._small = None
        return self._dec

    def compare(self, other: QuantityValue) -> int:
        """``q.Cmp(*other)``, as ``compareTo``, ``isGreaterThan`` and ``isLessThan`` call it."""
        if self._dec is not None or other._dec is not None:
            self._as_dec()
        return self.quantity.compare(other.quantity)

    def plus(self, other: qty.Quantity, sign: int) -> QuantityValue:
        """``copy := *q; copy.Add(other)`` (or ``Sub``), as ``add`` and ``sub`` do.

        Raises:
            modelplane.domain.quantity.QuantityTooLargeError: the exact result needs
                more than ``MAX_DIGITS`` digits.
        """
        result = self.quantity.add(other) if sign > 0 else self.quantity.sub(other)
        copy = QuantityValue(result, boxed=True)
        if not result.small:
            # Go's copy still points at our inf.Dec (if we have one) and adds into it.
            shared = self._dec if self._dec is not None else _Dec(result)
            shared.value = result
            copy._dec = shared
        return copy
