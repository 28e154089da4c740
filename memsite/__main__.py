"""`python -m memsite <command>`: Django's management commands, with or without a checkout
(`serve` starts its task consumer this way, so an installed app needs no manage.py)."""

from memsite.cli import manage

if __name__ == "__main__":
    manage()
