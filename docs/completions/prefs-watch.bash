#!/bin/bash

__prefs-watch_cursor_index_in_current_word() {
    local remaining="${COMP_LINE}"

    local word
    for word in "${COMP_WORDS[@]::COMP_CWORD}"; do
        remaining="${remaining##*([[:space:]])"${word}"*([[:space:]])}"
    done

    local -ir index="$((COMP_POINT - ${#COMP_LINE} + ${#remaining}))"
    if [[ "${index}" -le 0 ]]; then
        printf 0
    else
        printf %s "${index}"
    fi
}

# positional arguments:
#
# - 1: the current (sub)command's count of positional arguments
#
# required variables:
#
# - repeating_flags: the repeating flags that the current (sub)command can accept
# - non_repeating_flags: the non-repeating flags that the current (sub)command can accept
# - repeating_options: the repeating options that the current (sub)command can accept
# - non_repeating_options: the non-repeating options that the current (sub)command can accept
# - positional_number: value ignored
# - unparsed_words: unparsed words from the current command line
#
# modified variables:
#
# - non_repeating_flags: remove flags for this (sub)command that are already on the command line
# - non_repeating_options: remove options for this (sub)command that are already on the command line
# - positional_number: set to the current positional number
# - unparsed_words: remove all flags, options, and option values for this (sub)command
__prefs-watch_offer_flags_options() {
    local -ir positional_count="${1}"
    positional_number=0

    local was_flag_option_terminator_seen=false
    local is_parsing_option_value=false

    local -ar unparsed_word_indices=("${!unparsed_words[@]}")
    local -i word_index
    for word_index in "${unparsed_word_indices[@]}"; do
        if "${is_parsing_option_value}"; then
            # This word is an option value:
            # Reset marker for next word iff not currently the last word
            [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]] && is_parsing_option_value=false
            unset "unparsed_words[${word_index}]"
            # Do not process this word as a flag or an option
            continue
        fi

        local word="${unparsed_words["${word_index}"]}"
        if ! "${was_flag_option_terminator_seen}"; then
            case "${word}" in
            --)
                unset "unparsed_words[${word_index}]"
                # by itself -- is a flag/option terminator, but if it is the last word, it is the start of a completion
                if [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]]; then
                    was_flag_option_terminator_seen=true
                fi
                continue
                ;;
            -*)
                # ${word} is a flag or an option
                # If ${word} is an option, mark that the next word to be parsed is an option value
                local option
                for option in "${repeating_options[@]}" "${non_repeating_options[@]}"; do
                    [[ "${word}" = "${option}" ]] && is_parsing_option_value=true && break
                done

                # Remove ${word} from ${non_repeating_flags} or ${non_repeating_options} so it isn't offered again
                local not_found=true
                local -i index
                for index in "${!non_repeating_flags[@]}"; do
                    if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                        unset "non_repeating_flags[${index}]"
                        non_repeating_flags=("${non_repeating_flags[@]}")
                        not_found=false
                        break
                    fi
                done
                if "${not_found}"; then
                    for index in "${!non_repeating_flags[@]}"; do
                        if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                            unset "non_repeating_flags[${index}]"
                            non_repeating_flags=("${non_repeating_flags[@]}")
                            break
                        fi
                    done
                fi
                unset "unparsed_words[${word_index}]"
                continue
                ;;
            esac
        fi

        # ${word} is neither a flag, nor an option, nor an option value
        if [[ "${positional_number}" -lt "${positional_count}" || "${positional_count}" -lt 0 ]]; then
            # ${word} is a positional
            ((positional_number++))
            unset "unparsed_words[${word_index}]"
        else
            if [[ -z "${word}" ]]; then
                # Could be completing a flag, option, or subcommand
                positional_number=-1
            else
                # ${word} is a subcommand or invalid, so stop processing this (sub)command
                positional_number=-2
            fi
            break
        fi
    done

    unparsed_words=("${unparsed_words[@]}")

    if\
        ! "${was_flag_option_terminator_seen}"\
        && ! "${is_parsing_option_value}"\
        && [[ ("${cur}" = -* && "${positional_number}" -ge 0) || "${positional_number}" -eq -1 ]]
    then
        COMPREPLY+=($(compgen -W "${repeating_flags[*]} ${non_repeating_flags[*]} ${repeating_options[*]} ${non_repeating_options[*]}" -- "${cur}"))
    fi
}

__prefs-watch_add_completions() {
    local completion
    while IFS='' read -r completion; do
        COMPREPLY+=("${completion}")
    done < <(IFS=$'\n' compgen "${@}" -- "${cur}")
}

__prefs-watch_custom_complete() {
    if [[ -n "${cur}" || -z ${COMP_WORDS[${COMP_CWORD}]} || "${COMP_LINE:${COMP_POINT}:1}" != ' ' ]]; then
        local -ar words=("${COMP_WORDS[@]}")
    else
        local -ar words=("${COMP_WORDS[@]::${COMP_CWORD}}" '' "${COMP_WORDS[@]:${COMP_CWORD}}")
    fi

    "${COMP_WORDS[0]}" "${@}" "${words[@]}"
}

_prefs-watch() {
    local state
    state="$(shopt -p;shopt -po)"
    trap "${state//$'\n'/;}" RETURN
    shopt -s extglob
    set +o history +o posix

    local -xr SAP_SHELL=bash
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(IFS='.';printf %s "${BASH_VERSINFO[*]}")"
    local -r SAP_SHELL_VERSION

    local -r cur="${2}"
    local -r prev="${3}"

    local -i positional_number
    local -a unparsed_words=("${COMP_WORDS[@]:1:${COMP_CWORD}}")

    local -a repeating_flags=()
    local -a non_repeating_flags=(--version -h --help)
    local -a repeating_options=()
    local -a non_repeating_options=()
    __prefs-watch_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    tail|read|read-type|write|delete|list|find|export|import|migrate|rename|edit|locks|help|domains)
        # Offer subcommand argument completions
        "_prefs-watch_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        # Where the first word goes: the verbs. And the default verb's completions (suite names).
        [[ "${#unparsed_words[@]}" -eq 0 ]] && COMPREPLY+=($(compgen -W 'tail read read-type write delete list find export import migrate rename edit locks help domains' -- "${cur}"))
        _prefs-watch_tail
        ;;
    esac
}

_prefs-watch_tail() {
    repeating_flags=()
    non_repeating_flags=(-q --quiet --verbose --json --csv -0 --initial --wait --version -h --help)
    repeating_options=(--prefix --key)
    non_repeating_options=(--group --dir --lock-timeout --since --cursor --format -c --count -t --timeout --backlog)
    __prefs-watch_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--group')
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion tail -- --group "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    '--dir')
        __prefs-watch_add_completions -d
        return
        ;;
    '--lock-timeout')
        return
        ;;
    '--prefix')
        return
        ;;
    '--key')
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion tail -- --key "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    '--since')
        return
        ;;
    '--cursor')
        return
        ;;
    '--format')
        return
        ;;
    '-c'|'--count')
        return
        ;;
    '-t'|'--timeout')
        return
        ;;
    '--backlog')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    *)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion tail -- positional@0 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_prefs-watch_read() {
    repeating_flags=()
    non_repeating_flags=(-q --quiet --verbose --json --explain --version -h --help)
    repeating_options=()
    non_repeating_options=(--group --dir --lock-timeout)
    __prefs-watch_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--group')
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion read -- --group "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    '--dir')
        __prefs-watch_add_completions -d
        return
        ;;
    '--lock-timeout')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion read -- positional@0 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    2)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion read -- positional@1 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_prefs-watch_read-type() {
    repeating_flags=()
    non_repeating_flags=(-q --quiet --verbose --version -h --help)
    repeating_options=()
    non_repeating_options=(--group --dir --lock-timeout)
    __prefs-watch_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--group')
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion read-type -- --group "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    '--dir')
        __prefs-watch_add_completions -d
        return
        ;;
    '--lock-timeout')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion read-type -- positional@0 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    2)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion read-type -- positional@1 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_prefs-watch_write() {
    repeating_flags=()
    non_repeating_flags=(-q --quiet --verbose --create --version -h --help)
    repeating_options=()
    non_repeating_options=(--group --dir --lock-timeout)
    __prefs-watch_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--group')
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion write -- --group "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    '--dir')
        __prefs-watch_add_completions -d
        return
        ;;
    '--lock-timeout')
        return
        ;;
    esac

    # A type flag after the key (-<TAB>).
    if [[ "${cur}" == -* && "${positional_number}" -ge 2 ]]; then
        __prefs-watch_add_completions -W '-bool'$'\n''-boolean'$'\n''-data'$'\n''-date'$'\n''-float'$'\n''-int'$'\n''-integer'$'\n''-string'$'\n''-array'$'\n''-array-add'$'\n''-dict'$'\n''-dict-add'
    fi

    # Offer positional completions
    case "${positional_number}" in
    1)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion write -- positional@0 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    2)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion write -- positional@1 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    *)
        __prefs-watch_add_completions -W '-bool'$'\n''-boolean'$'\n''-data'$'\n''-date'$'\n''-float'$'\n''-int'$'\n''-integer'$'\n''-string'$'\n''-array'$'\n''-array-add'$'\n''-dict'$'\n''-dict-add'
        return
        ;;
    esac
}

_prefs-watch_delete() {
    repeating_flags=()
    non_repeating_flags=(-q --quiet --verbose --version -h --help)
    repeating_options=()
    non_repeating_options=(--group --dir --lock-timeout)
    __prefs-watch_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--group')
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion delete -- --group "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    '--dir')
        __prefs-watch_add_completions -d
        return
        ;;
    '--lock-timeout')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion delete -- positional@0 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    2)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion delete -- positional@1 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_prefs-watch_list() {
    repeating_flags=()
    non_repeating_flags=(-q --quiet --verbose --version -h --help)
    repeating_options=()
    non_repeating_options=(--group --dir --lock-timeout)
    __prefs-watch_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--group')
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion list -- --group "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    '--dir')
        __prefs-watch_add_completions -d
        return
        ;;
    '--lock-timeout')
        return
        ;;
    esac
}

_prefs-watch_find() {
    repeating_flags=()
    non_repeating_flags=(-q --quiet --verbose --version -h --help)
    repeating_options=()
    non_repeating_options=(--group --dir --lock-timeout)
    __prefs-watch_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--group')
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion find -- --group "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    '--dir')
        __prefs-watch_add_completions -d
        return
        ;;
    '--lock-timeout')
        return
        ;;
    esac
}

_prefs-watch_export() {
    repeating_flags=()
    non_repeating_flags=(-q --quiet --verbose --version -h --help)
    repeating_options=()
    non_repeating_options=(--group --dir --lock-timeout --format)
    __prefs-watch_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--group')
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion export -- --group "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    '--dir')
        __prefs-watch_add_completions -d
        return
        ;;
    '--lock-timeout')
        return
        ;;
    '--format')
        __prefs-watch_add_completions -W 'xml'$'\n''binary'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion export -- positional@0 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    2)
        __prefs-watch_add_completions -o plusdirs -fX '!*.@(plist)'
        return
        ;;
    esac
}

_prefs-watch_import() {
    repeating_flags=()
    non_repeating_flags=(-q --quiet --verbose --merge --skip-locked --create --version -h --help)
    repeating_options=()
    non_repeating_options=(--group --dir --lock-timeout)
    __prefs-watch_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--group')
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion import -- --group "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    '--dir')
        __prefs-watch_add_completions -d
        return
        ;;
    '--lock-timeout')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion import -- positional@0 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    2)
        __prefs-watch_add_completions -o plusdirs -fX '!*.@(plist)'
        return
        ;;
    esac
}

_prefs-watch_migrate() {
    repeating_flags=()
    non_repeating_flags=(-q --quiet --verbose --overwrite --create --version -h --help)
    repeating_options=()
    non_repeating_options=(--group --dir --lock-timeout)
    __prefs-watch_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--group')
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion migrate -- --group "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    '--dir')
        __prefs-watch_add_completions -d
        return
        ;;
    '--lock-timeout')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion migrate -- positional@0 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_prefs-watch_rename() {
    repeating_flags=()
    non_repeating_flags=(-q --quiet --verbose --version -h --help)
    repeating_options=()
    non_repeating_options=(--group --dir --lock-timeout)
    __prefs-watch_offer_flags_options 3

    # Offer option value completions
    case "${prev}" in
    '--group')
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion rename -- --group "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    '--dir')
        __prefs-watch_add_completions -d
        return
        ;;
    '--lock-timeout')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion rename -- positional@0 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    2)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion rename -- positional@1 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_prefs-watch_edit() {
    repeating_flags=()
    non_repeating_flags=(-q --quiet --verbose --create --version -h --help)
    repeating_options=()
    non_repeating_options=(--group --dir --lock-timeout)
    __prefs-watch_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--group')
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion edit -- --group "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    '--dir')
        __prefs-watch_add_completions -d
        return
        ;;
    '--lock-timeout')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion edit -- positional@0 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    2)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion edit -- positional@1 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_prefs-watch_locks() {
    repeating_flags=()
    non_repeating_flags=(-q --quiet --verbose --version -h --help)
    repeating_options=()
    non_repeating_options=(--group --dir --lock-timeout)
    __prefs-watch_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--group')
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion locks -- --group "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    '--dir')
        __prefs-watch_add_completions -d
        return
        ;;
    '--lock-timeout')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __prefs-watch_add_completions -W "$(__prefs-watch_custom_complete ---completion locks -- positional@0 "${COMP_CWORD}" "$(__prefs-watch_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_prefs-watch_help() {
    repeating_flags=()
    non_repeating_flags=(--version)
    repeating_options=()
    non_repeating_options=()
    __prefs-watch_offer_flags_options -1
}

complete -o filenames -F _prefs-watch prefs-watch
_prefs-watch_domains() {
    _prefs-watch_list
}
