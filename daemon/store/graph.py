"""The relations between memories, mirrored in memory like the search indexes: loaded from the
database when it opens and changed only after a write that commits."""
from collections import defaultdict
from collections.abc import Iterable

Edge = tuple[str, int, int]  # (relation type, from id, to id)


def pair(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a <= b else (b, a)


class Graph:
    def __init__(self, edges: list[Edge], verdicts: list[tuple[int, int]]):
        self.edges: set[Edge] = set(edges)
        self.separate: set[tuple[int, int]] = {pair(a, b) for a, b in verdicts}
        self._cycles: dict[int, list[int]] | None = None
        self._superseders: dict[int, list[int]] | None = None
        self._by_pair: dict[tuple[int, int], list[Edge]] | None = None
        self.version = 0  # bumped by every change

    # -- changes (write lock held) -------------------------------------------------------

    def add(self, rel: str, from_id: int, to_id: int) -> None:
        self.edges.add((rel, from_id, to_id))
        self._changed()

    def remove(self, rel: str, from_id: int, to_id: int) -> None:
        self.edges.discard((rel, from_id, to_id))
        self._changed()

    def keep_separate(self, a: int, b: int) -> None:
        self.separate.add(pair(a, b))
        self.version += 1

    def forget(self, ids: Iterable[int]) -> None:
        """Deleted memories take their edges and verdicts with them."""
        gone = set(ids)
        self.edges = {e for e in self.edges if e[1] not in gone and e[2] not in gone}
        self.separate = {p for p in self.separate if p[0] not in gone and p[1] not in gone}
        self._changed()

    def _changed(self) -> None:
        self._cycles = self._superseders = self._by_pair = None
        self.version += 1

    # -- questions -----------------------------------------------------------------------

    def between(self, a: int, b: int) -> list[Edge]:
        if self._by_pair is None:  # conflict flags ask this of every pair they show
            index: dict[tuple[int, int], list[Edge]] = defaultdict(list)
            for edge in sorted(self.edges):
                index[pair(edge[1], edge[2])].append(edge)
            self._by_pair = dict(index)
        return list(self._by_pair.get(pair(a, b), ()))

    def of(self, memory_id: int) -> list[dict[str, str | int]]:
        return [{"type": rel, "from_id": a, "to_id": b} for rel, a, b in sorted(self.edges)
                if memory_id in (a, b)]

    def kept_separate(self, a: int, b: int) -> bool:
        return pair(a, b) in self.separate

    def separate_from(self, memory_id: int) -> list[int]:
        return sorted(b if a == memory_id else a for a, b in self.separate
                      if memory_id in (a, b))

    def superseded_by(self, memory_id: int) -> list[int]:
        return list(self._superseded().get(memory_id, ()))

    def any_superseded(self, ids: Iterable[int]) -> bool:
        """Whether any of `ids` is superseded (searches ask this of every candidate)."""
        superseded = self._superseded()
        return bool(superseded) and any(i in superseded for i in ids)

    def _superseded(self) -> dict[int, list[int]]:
        """The memories that supersede each superseded memory."""
        if self._superseders is None:
            index: dict[int, list[int]] = defaultdict(list)
            for rel, a, b in sorted(self.edges):
                if rel == "SUPERSEDES":
                    index[b].append(a)
            self._superseders = dict(index)
        return self._superseders

    def supersedes(self, memory_id: int) -> list[int]:
        return sorted(b for rel, a, b in self.edges if rel == "SUPERSEDES" and a == memory_id)

    def supersession_cycle(self, memory_id: int) -> list[int] | None:
        """The SUPERSEDES cycle (strongly connected component) this memory is part of."""
        if self._cycles is None:
            self._cycles = {}
            for component in supersession_cycles(self.edges):
                for member in component:
                    self._cycles[member] = component
        return self._cycles.get(memory_id)


def supersession_cycles(edges: Iterable[Edge]) -> list[list[int]]:
    """Strongly connected components of the SUPERSEDES graph with more than one member, or a
    memory that supersedes itself (Tarjan's algorithm, iterative)."""
    successors: dict[int, list[int]] = defaultdict(list)
    for rel, a, b in edges:
        if rel == "SUPERSEDES":
            successors[a].append(b)
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    components: list[list[int]] = []
    counter = 0
    for root in sorted(successors):
        if root in index:
            continue
        work = [(root, iter(successors[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(successors.get(child, ()))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in successors.get(node, ()):
                    components.append(sorted(component))
    return sorted(components)
