"""The critic's size caps and how much room a parent leaves a change under them.

One rule for the size and growth guards, the mutator's briefing and `--lint`, so what the mutator is told
is what the critic checks. Pure: takes a loaded skill and the caps, returns figures and text.
"""

from __future__ import annotations

from dataclasses import dataclass

from mutator.critic.text import Tree


@dataclass(frozen=True)
class GateLimits:
    """Caps of the safety gates (config: critic.maxSkillLines, critic.maxSkillBytes, critic.maxGrowth,
    critic.minGrowthBytes)."""
    max_lines: int = 500            # SKILL.md lines (the Agent Skills guidance)
    max_bytes: int = 262_144        # text of the skill together (SKILL.md and text files; binary assets free)
    # a change may add max(max_growth x the parent's text bytes, min_growth_bytes)
    max_growth: float = 0.20
    min_growth_bytes: int = 2048


def limits_from(settings) -> GateLimits:
    """The caps from merged settings (anything with the critic_* attributes of mutator.config.Settings)."""
    return GateLimits(max_lines=settings.critic.max_lines, max_bytes=settings.critic.max_bytes,
                      max_growth=settings.critic.max_growth,
                      min_growth_bytes=settings.critic.min_growth_bytes)


def growth_allowance(parent: Tree, limits: GateLimits) -> int:
    """Bytes one change may add over all files: max(maxGrowth x the parent's text bytes, minGrowthBytes)."""
    return max(int(limits.max_growth * parent.text_bytes), limits.min_growth_bytes)


def line_allowance(parent: Tree, limits: GateLimits) -> int:
    """SKILL.md lines one change may add to a parent already over the line cap: maxGrowth x its lines (the
    growth rule in the cap's own unit, so an over-cap SKILL.md cannot take the
    folder's whole byte allowance)."""
    return int(limits.max_growth * parent.skill_md_lines)


@dataclass(frozen=True)
class Room:
    """A parent's figures under the caps, and what one change of it may add before the critic rejects it."""
    lines: int              # the parent's SKILL.md lines
    text_bytes: int         # its bytes of text (binary files are not counted)
    limits: GateLimits
    growth_bytes: int       # the growth allowance: bytes one change may add over all files
    growth_lines: int       # SKILL.md lines one change may add while the parent is over the line cap

    @property
    def over_lines(self) -> bool:
        return self.lines > self.limits.max_lines

    @property
    def over_bytes(self) -> bool:
        return self.text_bytes > self.limits.max_bytes

    @property
    def lines_left(self) -> int:
        return self.growth_lines if self.over_lines else self.limits.max_lines - self.lines

    @property
    def bytes_left(self) -> int:
        return self.growth_bytes if self.over_bytes else min(self.limits.max_bytes - self.text_bytes,
                                                             self.growth_bytes)


def room(parent: Tree, limits: GateLimits) -> Room:
    return Room(lines=parent.skill_md_lines, text_bytes=parent.text_bytes, limits=limits,
                growth_bytes=growth_allowance(parent, limits), growth_lines=line_allowance(parent, limits))


def caps_text(room: Room) -> str:
    """The caps in numbers and the room this parent leaves: what the briefing and `--lint` say."""
    caps, pct = room.limits, f"{room.limits.max_growth:.0%}"
    if room.over_lines:
        lines = (f"- SKILL.md: {room.lines} lines, already over the {caps.max_lines}-line cap "
                 f"(critic.maxSkillLines): a change may still add up to {room.growth_lines} lines "
                 f"(critic.maxGrowth {pct} of {room.lines}), with a warning; a shorter SKILL.md is welcome")
    else:
        lines = (f"- SKILL.md: {room.lines} lines of the {caps.max_lines}-line cap (critic.maxSkillLines): "
                 f"{room.lines_left} lines left")
    if room.over_bytes:
        text = (f"- text: {room.text_bytes} bytes, already over the {caps.max_bytes}-byte cap "
                "(critic.maxSkillBytes): a change may still add "
                f"up to {room.growth_bytes} bytes, with a warning")
    else:
        text = (f"- text: {room.text_bytes} bytes of the {caps.max_bytes}-byte cap (critic.maxSkillBytes): "
                f"{caps.max_bytes - room.text_bytes} bytes left")
    return "\n".join([
        lines, text + " (SKILL.md and every text file; fonts, images and office templates are not counted)",
        f"- growth: one change may add at most {room.growth_bytes} bytes over all files, binary ones too "
        f"(max(critic.maxGrowth {pct} of {room.text_bytes} bytes of text, critic.minGrowthBytes "
        f"{caps.min_growth_bytes}))",
        f"This change may add at most {room.lines_left} lines to SKILL.md and {room.bytes_left} bytes in "
        "all; a candidate past a cap is rejected before it is evaluated, "
        "and its mutator call is spent for nothing."])
