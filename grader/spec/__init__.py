"""What an assignment is: the registry of declarations (`registry`), the stored reference
outputs (`references`, public ones in `public/`) and the public cases released for `check()`
(`checkfile`)."""
