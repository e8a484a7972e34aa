#compdef prefs-watch

__prefs-watch_complete() {
    local -ar non_empty_completions=("${@:#(|:*)}")
    local -ar empty_completions=("${(M)@:#(|:*)}")
    _describe -V '' non_empty_completions -- empty_completions -P $'\'\''
}

__prefs-watch_custom_complete() {
    local -a completions
    completions=("${(@f)"$("${command_name}" "${@}" "${command_line[@]}")"}")
    if [[ "${#completions[@]}" -gt 1 ]]; then
        __prefs-watch_complete "${completions[@]:0:-1}"
    fi
}

__prefs-watch_cursor_index_in_current_word() {
    if [[ -z "${QIPREFIX}${IPREFIX}${PREFIX}" ]]; then
        printf 0
    else
        printf %s "${#${(z)LBUFFER}[-1]}"
    fi
}

_prefs-watch() {
    emulate -RL zsh -G
    setopt extendedglob nullglob numericglobsort
    unsetopt aliases banghist

    local -xr SAP_SHELL=zsh
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(builtin emulate zsh -c 'printf %s "${ZSH_VERSION}"')"
    local -r SAP_SHELL_VERSION

    local context state state_descr line
    local -A opt_args

    local -r command_name="${words[1]}"
    local -ar command_line=("${words[@]}")
    local -ir current_word_index="$((CURRENT - 1))"

    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'tail:Print every change of every key as it happens, like inotifywait -m but per key.'
            'read:Print a suite (as an XML property list) or one key'\''s value.'
            'read-type:Print the property-list type of a key'\''s value.'
            'write:Set a key, through the locked, merged, atomic write path.'
            'delete:Remove a key, or every key of a suite.'
            'list:List suites: names in a group or directory, or the paths of all suites.'
            'find:Print every suite, key and value that contains a word (ignoring case), as defaults find does.'
            'export:Write a suite to a property-list file, or to standard output with -.'
            'import:Replace a suite'\''s values with those of a property-list file (- reads standard input).'
            'migrate:Copy a Foundation UserDefaults suite'\''s values into a suite, types kept; the UserDefaults file is only read.'
            'rename:Rename a key, atomically.'
            'edit:Edit a suite (or one key) in $VISUAL or $EDITOR; only the keys you change are written.'
            'locks:List the keys a system layer locks in a suite, each with its locks file.'
            'help:Show subcommand help information.'
            'domains:List suites: names in a group or directory, or the paths of all suites.'
        )
        _describe -V subcommand subcommands && ret=0
        # Or the default verb's: suite names.
        __prefs-watch_custom_complete ---completion tail -- positional@0 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)" && ret=0
        ;;
    arg)
        case "${words[1]}" in
        tail|read|read-type|write|delete|list|find|export|import|migrate|rename|edit|locks|help|domains)
            "_prefs-watch_${words[1]}" && ret=0
            ;;
        *)
            _prefs-watch_tail && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_prefs-watch_tail() {
    local -i ret=1
    local -ar arg_specs=(
        '*:suites:{__prefs-watch_custom_complete ---completion tail -- positional@0 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--group[Look suite names up in this app group'\''s container.]:id:{__prefs-watch_custom_complete ---completion tail -- --group "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--dir[Look suite names up in this directory (a container\: its Library/Preferences is used when present).]:path:_files -/'
        '(-q --quiet)'{-q,--quiet}'[Print no warnings of the library, only errors.]'
        '--verbose[Print what the library notices too (its info log lines).]'
        '--lock-timeout[Wait this long at most for a suite'\''s lock (default 5), as PreferenceSuite.Options.lockTimeout.]:seconds:'
        '*--prefix[Only keys starting with this prefix (repeatable).]:prefix:'
        '*--key[Only this key (repeatable).]:key:{__prefs-watch_custom_complete ---completion tail -- --key "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--json[JSON Lines\: ts, seq (the write'\''s number), record, suite, key, op, old, new (and message).]'
        '--csv[CSV\: ts,seq,suite,key,op,old,new,message, quoted as inotifywait does.]'
        '--since[Print every write after this number first (from the suite'\''s journal), then follow. One suite.]:number:'
        '--cursor[Resume from the number saved in this file, and save there the number of each write once printed. One suite.]:file:'
        '--format[Print each record with these % letters (see below).]:format:'
        '-0[End records with NUL instead of a newline.]'
        '--initial[Print the current values first (operation initial); with --cursor, when the file does not exist yet.]'
        '--wait[Wait for a named suite, or the --group or --dir directory, that does not exist yet (without it, that is an error). A --dir directory that is empty or holds only Library is waited for until it shows whether it is a container.]'
        '(-c --count)'{-c,--count}'[Exit with 0 after this many records.]:count:'
        '(-t --timeout)'{-t,--timeout}'[Exit with 2 when no record arrives for this many seconds.]:timeout:'
        '--backlog[Output held for a reader that falls behind, in bytes (K, M and G suffixes); past it, changes of a key are merged.]:size:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_prefs-watch_read() {
    local -i ret=1
    local -ar arg_specs=(
        '--group[Look suite names up in this app group'\''s container.]:id:{__prefs-watch_custom_complete ---completion read -- --group "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--dir[Look suite names up in this directory (a container\: its Library/Preferences is used when present).]:path:_files -/'
        '(-q --quiet)'{-q,--quiet}'[Print no warnings of the library, only errors.]'
        '--verbose[Print what the library notices too (its info log lines).]'
        '--lock-timeout[Wait this long at most for a suite'\''s lock (default 5), as PreferenceSuite.Options.lockTimeout.]:seconds:'
        ':suite:{__prefs-watch_custom_complete ---completion read -- positional@0 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        ':key:{__prefs-watch_custom_complete ---completion read -- positional@1 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--json[Print JSON instead.]'
        '--explain[Print the key'\''s value as programs read it, then its layer and file, and the suite'\''s number.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_prefs-watch_read-type() {
    local -i ret=1
    local -ar arg_specs=(
        '--group[Look suite names up in this app group'\''s container.]:id:{__prefs-watch_custom_complete ---completion read-type -- --group "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--dir[Look suite names up in this directory (a container\: its Library/Preferences is used when present).]:path:_files -/'
        '(-q --quiet)'{-q,--quiet}'[Print no warnings of the library, only errors.]'
        '--verbose[Print what the library notices too (its info log lines).]'
        '--lock-timeout[Wait this long at most for a suite'\''s lock (default 5), as PreferenceSuite.Options.lockTimeout.]:seconds:'
        ':suite:{__prefs-watch_custom_complete ---completion read-type -- positional@0 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        ':key:{__prefs-watch_custom_complete ---completion read-type -- positional@1 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_prefs-watch_write() {
    local -i ret=1
    local -ar _value=('-bool' '-boolean' '-data' '-date' '-float' '-int' '-integer' '-string' '-array' '-array-add' '-dict' '-dict-add')
    local -ar arg_specs=(
        '--group[Look suite names up in this app group'\''s container.]:id:{__prefs-watch_custom_complete ---completion write -- --group "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--dir[Look suite names up in this directory (a container\: its Library/Preferences is used when present).]:path:_files -/'
        '(-q --quiet)'{-q,--quiet}'[Print no warnings of the library, only errors.]'
        '--verbose[Print what the library notices too (its info log lines).]'
        '--lock-timeout[Wait this long at most for a suite'\''s lock (default 5), as PreferenceSuite.Options.lockTimeout.]:seconds:'
        ':suite:{__prefs-watch_custom_complete ---completion write -- positional@0 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        ':key:{__prefs-watch_custom_complete ---completion write -- positional@1 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--create[Create the suite at a path that does not end in .plist, or the directory it goes in.]'
        '*:value:{__prefs-watch_complete "${_value[@]}"}'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_prefs-watch_delete() {
    local -i ret=1
    local -ar arg_specs=(
        '--group[Look suite names up in this app group'\''s container.]:id:{__prefs-watch_custom_complete ---completion delete -- --group "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--dir[Look suite names up in this directory (a container\: its Library/Preferences is used when present).]:path:_files -/'
        '(-q --quiet)'{-q,--quiet}'[Print no warnings of the library, only errors.]'
        '--verbose[Print what the library notices too (its info log lines).]'
        '--lock-timeout[Wait this long at most for a suite'\''s lock (default 5), as PreferenceSuite.Options.lockTimeout.]:seconds:'
        ':suite:{__prefs-watch_custom_complete ---completion delete -- positional@0 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        ':key:{__prefs-watch_custom_complete ---completion delete -- positional@1 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_prefs-watch_list() {
    local -i ret=1
    local -ar arg_specs=(
        '--group[Look suite names up in this app group'\''s container.]:id:{__prefs-watch_custom_complete ---completion list -- --group "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--dir[Look suite names up in this directory (a container\: its Library/Preferences is used when present).]:path:_files -/'
        '(-q --quiet)'{-q,--quiet}'[Print no warnings of the library, only errors.]'
        '--verbose[Print what the library notices too (its info log lines).]'
        '--lock-timeout[Wait this long at most for a suite'\''s lock (default 5), as PreferenceSuite.Options.lockTimeout.]:seconds:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_prefs-watch_find() {
    local -i ret=1
    local -ar arg_specs=(
        '--group[Look suite names up in this app group'\''s container.]:id:{__prefs-watch_custom_complete ---completion find -- --group "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--dir[Look suite names up in this directory (a container\: its Library/Preferences is used when present).]:path:_files -/'
        '(-q --quiet)'{-q,--quiet}'[Print no warnings of the library, only errors.]'
        '--verbose[Print what the library notices too (its info log lines).]'
        '--lock-timeout[Wait this long at most for a suite'\''s lock (default 5), as PreferenceSuite.Options.lockTimeout.]:seconds:'
        ':word:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_prefs-watch_export() {
    local -i ret=1
    local -ar ___format=('xml' 'binary')
    local -ar arg_specs=(
        '--group[Look suite names up in this app group'\''s container.]:id:{__prefs-watch_custom_complete ---completion export -- --group "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--dir[Look suite names up in this directory (a container\: its Library/Preferences is used when present).]:path:_files -/'
        '(-q --quiet)'{-q,--quiet}'[Print no warnings of the library, only errors.]'
        '--verbose[Print what the library notices too (its info log lines).]'
        '--lock-timeout[Wait this long at most for a suite'\''s lock (default 5), as PreferenceSuite.Options.lockTimeout.]:seconds:'
        ':suite:{__prefs-watch_custom_complete ---completion export -- positional@0 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        ':destination:_files -g '\''*.plist'\'''
        '--format[xml or binary.]:format:{__prefs-watch_complete "${___format[@]}"}'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_prefs-watch_import() {
    local -i ret=1
    local -ar arg_specs=(
        '--group[Look suite names up in this app group'\''s container.]:id:{__prefs-watch_custom_complete ---completion import -- --group "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--dir[Look suite names up in this directory (a container\: its Library/Preferences is used when present).]:path:_files -/'
        '(-q --quiet)'{-q,--quiet}'[Print no warnings of the library, only errors.]'
        '--verbose[Print what the library notices too (its info log lines).]'
        '--lock-timeout[Wait this long at most for a suite'\''s lock (default 5), as PreferenceSuite.Options.lockTimeout.]:seconds:'
        ':suite:{__prefs-watch_custom_complete ---completion import -- positional@0 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        ':source:_files -g '\''*.plist'\'''
        '--merge[Keep keys the file does not have.]'
        '--skip-locked[Leave out the keys a system layer locks, and list them, instead of refusing the whole import.]'
        '--create[Create the suite at a path that does not end in .plist, or the directory it goes in.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_prefs-watch_migrate() {
    local -i ret=1
    local -ar arg_specs=(
        '--group[Look suite names up in this app group'\''s container.]:id:{__prefs-watch_custom_complete ---completion migrate -- --group "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--dir[Look suite names up in this directory (a container\: its Library/Preferences is used when present).]:path:_files -/'
        '(-q --quiet)'{-q,--quiet}'[Print no warnings of the library, only errors.]'
        '--verbose[Print what the library notices too (its info log lines).]'
        '--lock-timeout[Wait this long at most for a suite'\''s lock (default 5), as PreferenceSuite.Options.lockTimeout.]:seconds:'
        ':suite:{__prefs-watch_custom_complete ---completion migrate -- positional@0 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        ':user-defaults-suite:'
        '--overwrite[Let the UserDefaults values replace the suite'\''s own.]'
        '--create[Create the suite at a path that does not end in .plist, or the directory it goes in.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_prefs-watch_rename() {
    local -i ret=1
    local -ar arg_specs=(
        '--group[Look suite names up in this app group'\''s container.]:id:{__prefs-watch_custom_complete ---completion rename -- --group "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--dir[Look suite names up in this directory (a container\: its Library/Preferences is used when present).]:path:_files -/'
        '(-q --quiet)'{-q,--quiet}'[Print no warnings of the library, only errors.]'
        '--verbose[Print what the library notices too (its info log lines).]'
        '--lock-timeout[Wait this long at most for a suite'\''s lock (default 5), as PreferenceSuite.Options.lockTimeout.]:seconds:'
        ':suite:{__prefs-watch_custom_complete ---completion rename -- positional@0 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        ':old:{__prefs-watch_custom_complete ---completion rename -- positional@1 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        ':new:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_prefs-watch_edit() {
    local -i ret=1
    local -ar arg_specs=(
        '--group[Look suite names up in this app group'\''s container.]:id:{__prefs-watch_custom_complete ---completion edit -- --group "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--dir[Look suite names up in this directory (a container\: its Library/Preferences is used when present).]:path:_files -/'
        '(-q --quiet)'{-q,--quiet}'[Print no warnings of the library, only errors.]'
        '--verbose[Print what the library notices too (its info log lines).]'
        '--lock-timeout[Wait this long at most for a suite'\''s lock (default 5), as PreferenceSuite.Options.lockTimeout.]:seconds:'
        ':suite:{__prefs-watch_custom_complete ---completion edit -- positional@0 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        ':key:{__prefs-watch_custom_complete ---completion edit -- positional@1 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--create[Create the suite at a path that does not end in .plist.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_prefs-watch_locks() {
    local -i ret=1
    local -ar arg_specs=(
        '--group[Look suite names up in this app group'\''s container.]:id:{__prefs-watch_custom_complete ---completion locks -- --group "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--dir[Look suite names up in this directory (a container\: its Library/Preferences is used when present).]:path:_files -/'
        '(-q --quiet)'{-q,--quiet}'[Print no warnings of the library, only errors.]'
        '--verbose[Print what the library notices too (its info log lines).]'
        '--lock-timeout[Wait this long at most for a suite'\''s lock (default 5), as PreferenceSuite.Options.lockTimeout.]:seconds:'
        ':suite:{__prefs-watch_custom_complete ---completion locks -- positional@0 "${current_word_index}" "$(__prefs-watch_cursor_index_in_current_word)"}'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_prefs-watch_help() {
    local -i ret=1
    local -ar arg_specs=(
        '*:subcommands:'
        '--version[Show the version.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

if [[ "${funcstack[1]}" = _prefs-watch ]]; then
    _prefs-watch "${@}"
else
    compdef _prefs-watch prefs-watch
fi
_prefs-watch_domains() {
    _prefs-watch_list
}
