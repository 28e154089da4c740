"""Everything about backups in one place: an archive of the whole memory and its restore.

- export.py: writes an archive (rows as JSON lines, card files, attachment files);
- restore.py: checks an archive whole, previews it, restores it or merges it;
- staging.py, recovery.py: an import or card save cut short is finished or undone at the
  next start, so a killed restore can simply be run again.
"""
